// The HTTP API as the pages call it: Prometheus' JSON envelope unpacked,
// the tenant header added, failures turned into one message.

const TENANT_KEY = 'strata.tenant';

/** The tenant the pages read, '' for the default one. */
export function getTenant() {
  return localStorage.getItem(TENANT_KEY) || '';
}

export function setTenant(t) {
  if (t) localStorage.setItem(TENANT_KEY, t);
  else localStorage.removeItem(TENANT_KEY);
}

/**
 * Calls `path` with `params` (a form POST when `post`, since queries may be
 * long) and answers {data, warnings, infos} or throws an Error whose
 * message is the server's.
 */
export async function api(path, params = {}, { post = false, signal } = {}) {
  const headers = {};
  const tenant = getTenant();
  if (tenant) headers['X-Scope-OrgID'] = tenant;
  const body = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (Array.isArray(v)) v.forEach((x) => body.append(k, x));
    else if (v !== undefined && v !== null && v !== '') body.append(k, v);
  }
  let resp;
  if (post) {
    headers['Content-Type'] = 'application/x-www-form-urlencoded';
    resp = await fetch(path, { method: 'POST', headers, body, signal });
  } else {
    const qs = body.toString();
    resp = await fetch(qs ? `${path}?${qs}` : path, { headers, signal });
  }
  const text = await resp.text();
  let json;
  try {
    json = JSON.parse(text);
  } catch {
    throw new Error(`HTTP ${resp.status}: ${text.trim() || resp.statusText}`);
  }
  if (json.status !== 'success') {
    const err = new Error(json.error || `HTTP ${resp.status}`);
    err.errorType = json.errorType;
    err.warnings = json.warnings || [];
    err.infos = json.infos || [];
    throw err;
  }
  return { data: json.data, warnings: json.warnings || [], infos: json.infos || [] };
}
