/** Data and actions of a settings tab: loading with a reload (`useLoad`), one action at a time (`useAction`), errors. */
import { useCallback, useEffect, useRef, useState } from "react";

/** The message of anything thrown, for the page. */
export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

export interface Loaded<T> {
  data?: T;
  error: string;
  loading: boolean;
  reload: () => Promise<void>;
}

/** Call `load` on mount and on `reload()`; a failure keeps the last data and sets `error`.
 * `load` must be stable (a module-level function). */
export function useLoad<T>(load: () => Promise<T>): Loaded<T> {
  const [state, setState] = useState<{ data?: T; error: string; loading: boolean }>({ error: "", loading: true });
  const alive = useRef(true);
  const reload = useCallback(async () => {
    setState((s) => ({ ...s, loading: true }));
    try {
      const data = await load();
      if (alive.current) setState({ data, error: "", loading: false });
    } catch (e) {
      if (alive.current) setState((s) => ({ data: s.data, error: errorText(e), loading: false }));
    }
  }, [load]);
  useEffect(() => {
    alive.current = true;
    void reload();
    return () => {
      alive.current = false;
    };
  }, [reload]);
  return { ...state, reload };
}

/** One action at a time (a save, a switch, a check): `busy` while `run(what)` runs; its error goes
 * to `onError`, which is cleared first. */
export function useAction(onError: (error: string) => void): { busy: boolean; run: (what: () => Promise<unknown>) => Promise<void> } {
  const [busy, setBusy] = useState(false);
  const run = async (what: () => Promise<unknown>) => {
    setBusy(true);
    onError("");
    try {
      await what();
    } catch (e) {
      onError(errorText(e));
    } finally {
      setBusy(false);
    }
  };
  return { busy, run };
}

/** An error in a settings tab, dismissible when `onDismiss` is given. */
export function PanelError({ error, onDismiss }: { error: string; onDismiss?: () => void }) {
  if (!error) return null;
  return (
    <div className="error settings-error" role="alert" data-testid="settings-error">
      <span>{error}</span>
      {onDismiss && <button type="button" onClick={onDismiss} aria-label="Dismiss">×</button>}
    </div>
  );
}
