/** The open thread lives in the URL (?thread=<id>), so a reload reopens it. */
import { useCallback, useEffect, useState } from "react";

function read(): string | null {
  return new URLSearchParams(window.location.search).get("thread");
}

export function useThreadParam(): [string | null, (id: string | null) => void] {
  const [threadId, setState] = useState<string | null>(read);
  useEffect(() => {
    const onPop = () => setState(read());
    window.addEventListener("popstate", onPop);
    return () => window.removeEventListener("popstate", onPop);
  }, []);
  const set = useCallback((id: string | null) => {
    setState(id);
    const url = new URL(window.location.href);
    if (id) url.searchParams.set("thread", id);
    else url.searchParams.delete("thread");
    if (url.href !== window.location.href) window.history.pushState(null, "", url);
  }, []);
  return [threadId, set];
}
