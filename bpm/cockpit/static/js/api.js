// The cockpit's JSON API: reads with the session cookie (or open access under `bpm dev`),
// actions with the session's CSRF token in the X-CSRF-Token header.

export const session = { authenticated: false, canAct: false, csrf: null, key: null, role: null, open: false };

export class ApiError extends Error {
  constructor(status, body) {
    super((body && body.message) || `HTTP ${status}`);
    this.status = status;
    this.type = body && body.type;
  }
}

async function call(method, path, body) {
  const headers = { Accept: 'application/json' };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (method !== 'GET' && session.csrf) headers['X-CSRF-Token'] = session.csrf;
  const resp = await fetch(`/api${path}`, {
    method,
    headers,
    credentials: 'same-origin',
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const type = resp.headers.get('content-type') || '';
  const data = type.includes('json') ? await resp.json() : await resp.text();
  if (!resp.ok) throw new ApiError(resp.status, typeof data === 'object' ? data : { message: data });
  return data;
}

export function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) {
    if (v !== null && v !== undefined && v !== '') q.set(k, v);
  }
  const s = q.toString();
  return s ? `?${s}` : '';
}

export const get = (path, params) => call('GET', path + query(params));
export const post = (path, body = {}) => call('POST', path, body);

export async function loadSession() {
  Object.assign(session, await call('GET', '/session'));
  return session;
}

export async function login(secret) {
  Object.assign(session, await call('POST', '/session', { secret }));
  return session;
}

export async function logout() {
  await call('DELETE', '/session');
  Object.assign(session, { authenticated: false, canAct: false, csrf: null, key: null, role: null });
}
