/** The model picker, from GET /api/models. */
import { useEffect, useState } from "react";
import { getModels, type ModelInfo } from "../api/rest";

export function ModelPicker(props: { value: string; onChange: (name: string) => void; onError: (e: string) => void; reloadKey: number }) {
  const [models, setModels] = useState<ModelInfo[]>([]);
  const { value, onChange, onError, reloadKey } = props;
  const loaded = models.length > 0;
  useEffect(() => {
    if (loaded) return;
    getModels()
      .then((r) => {
        setModels(r.models);
        if (!value) onChange(r.default);
      })
      .catch((e: Error) => onError(e.message));
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [reloadKey, loaded]);
  return (
    <label className="model-picker">
      Model
      <select value={value} onChange={(e) => onChange(e.target.value)} data-testid="model-picker">
        {models.map((m) => (
          <option key={m.name} value={m.name}>{m.display_name}</option>
        ))}
      </select>
    </label>
  );
}
