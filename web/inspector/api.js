// The page's only way to the server: the public v3 routes, with the key the person gave (kept in
// sessionStorage, so it lasts as long as the tab and is never in a URL or a cookie).

const KEY = 'engram.inspector.key';

export const keyStore = {
  get: () => sessionStorage.getItem(KEY) ?? '',
  set: (key) => sessionStorage.setItem(KEY, key),
  clear: () => sessionStorage.removeItem(KEY),
};

/** An answer other than 2xx, with the server's `detail` as its message. */
export class ApiError extends Error {
  constructor(status, detail) {
    super(typeof detail === 'string' ? detail : JSON.stringify(detail));
    this.status = status;
  }
}

const listeners = new Set();
/** Called with every 401, so the page can ask for a key. */
export const onUnauthorized = (listener) => {
  listeners.add(listener);
  return () => listeners.delete(listener);
};

/** `method` on `/v3` + `path`, a JSON body if given; the parsed answer, null for an empty one. */
export async function call(method, path, body) {
  const headers = { accept: 'application/json' };
  const key = keyStore.get();
  if (key !== '') headers.authorization = `Bearer ${key}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(`/v3${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await response.text();
  let parsed = null;
  if (text !== '') {
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = text;
    }
  }
  if (!response.ok) {
    if (response.status === 401) for (const listener of listeners) listener();
    throw new ApiError(response.status, parsed?.detail ?? parsed ?? response.statusText);
  }
  return parsed;
}

export const enc = encodeURIComponent;
export const ws = (w) => `/workspaces/${enc(w)}`;

/** The claims of the key (a JWT): `w`, `p`, `s`, `ad`; empty when there is no key or it cannot be read. */
export function keyClaims() {
  const key = keyStore.get();
  const part = key.split('.')[1];
  if (part === undefined) return {};
  try {
    const json = atob(part.replace(/-/g, '+').replace(/_/g, '/').padEnd(Math.ceil(part.length / 4) * 4, '='));
    const claims = JSON.parse(json);
    return claims !== null && typeof claims === 'object' ? claims : {};
  } catch {
    return {};
  }
}
