/** The gateway API key (when `gateway.api_keys` is set), kept in this browser's localStorage. */
const STORAGE = "herdsman.apiKey";

export function getApiKey(): string | undefined {
  try {
    return window.localStorage.getItem(STORAGE) || undefined;
  } catch {
    return undefined;
  }
}

export function setApiKey(key: string): void {
  if (key) window.localStorage.setItem(STORAGE, key);
  else window.localStorage.removeItem(STORAGE);
}

/** Headers carrying the key, for REST calls. */
export function authHeaders(): Record<string, string> {
  const key = getApiKey();
  return key ? { "x-api-key": key } : {};
}
