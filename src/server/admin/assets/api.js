// The daemon's public REST API, as every other client uses it. The API key lives in
// sessionStorage only and travels in the API-key header, never in a URL.

const KEY_STORAGE = 'shardlite.admin.apiKey';
const DEFAULT_KEY_HEADER = 'X-CSharpDB-Api-Key';
const KEYSPACE_HEADER = 'X-CSharpDB-Keyspace';
const SHARD_KEY_HEADER = 'X-CSharpDB-Shard-Key';

let keyHeader = DEFAULT_KEY_HEADER;

/** A failed call: `status`, and the problem body's `errorCode` and `detail` when there is one. */
export class ApiError extends Error {
  constructor(status, problem) {
    const detail = problem && typeof problem.detail === 'string' ? problem.detail : `the daemon answered ${status}`;
    super(detail);
    this.status = status;
    this.errorCode = problem && problem.errorCode;
    this.problem = problem;
  }

  /** The daemon has no such endpoint (as opposed to a missing object behind one). */
  get noEndpoint() {
    return this.status === 404 && this.errorCode === 'not_found' && !(this.problem && this.problem.missing);
  }
}

export const apiKey = {
  get: () => sessionStorage.getItem(KEY_STORAGE),
  set: (key) => sessionStorage.setItem(KEY_STORAGE, key),
  forget: () => sessionStorage.removeItem(KEY_STORAGE),
};

/** Whether a route key can travel in an HTTP header from a browser (printable ASCII). */
export function headerSafe(text) {
  return /^[\x20-\x7e]*$/.test(text);
}

/**
 * Calls the daemon. `route` ({keyspace, key}) adds the route headers; `body` is sent as JSON.
 * Resolves to the parsed JSON (null for 204); rejects with an ApiError.
 */
export async function call(method, path, { body, route } = {}) {
  const headers = { Accept: 'application/json' };
  const key = apiKey.get();
  if (key) headers[keyHeader] = key;
  if (route) {
    if (!headerSafe(route.keyspace) || !headerSafe(route.key)) {
      throw new ApiError(400, {
        errorCode: 'invalid_input',
        detail: 'a browser can send only printable ASCII route keys in headers; use the CLI or an SDK for others',
      });
    }
    headers[KEYSPACE_HEADER] = route.keyspace;
    headers[SHARD_KEY_HEADER] = route.key;
  }
  let payload;
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    payload = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, { method, headers, body: payload, credentials: 'omit', cache: 'no-store' });
  } catch (err) {
    throw new ApiError(0, { errorCode: 'unavailable', detail: `the daemon could not be reached (${err.message})` });
  }
  if (response.status === 401) learnKeyHeader(response.headers.get('WWW-Authenticate'));
  if (response.status === 204) return null;
  const text = await response.text();
  let data = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = { detail: `the daemon answered ${response.status} with a body that is not JSON` };
    }
  }
  if (!response.ok) throw new ApiError(response.status, data);
  return data;
}

/** The daemon names its API-key header in its 401 challenge: `ApiKey header="NAME"`. */
function learnKeyHeader(challenge) {
  const match = /header="([!#$%&'*+.^_`|~0-9A-Za-z-]+)"/.exec(challenge || '');
  if (match) keyHeader = match[1];
}

export const get = (path, options) => call('GET', path, options);
export const post = (path, body, options = {}) => call('POST', path, { ...options, body });
