/** The gateway's limits (GET /api/limits), for checks the page makes before sending. */
import { useEffect, useState } from "react";
import { getLimits } from "../api/rest";

/** The largest upload request the gateway takes, in bytes; null until known (then the gateway's 413 says it).
 * Asked again whenever `gatewayUp` turns true, so a restarted gateway with a new limit is seen. */
export function useUploadLimit(gatewayUp: boolean): number | null {
  const [limit, setLimit] = useState<number | null>(null);
  useEffect(() => {
    if (!gatewayUp) return;
    let cancelled = false;
    getLimits()
      .then((l) => !cancelled && setLimit(l.max_upload_bytes))
      .catch(() => { /* unknown: uploads are still checked by the gateway */ });
    return () => { cancelled = true; };
  }, [gatewayUp]);
  return limit;
}

/** A size in MB for messages ("50 MB", "1024 MB"). */
export function megabytes(bytes: number): string {
  return `${(bytes / 2 ** 20).toFixed(0)} MB`;
}
