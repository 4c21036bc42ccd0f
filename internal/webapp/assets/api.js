// The HTTP API from the browser: same origin, JSON, the bearer token in a
// header (never in a URL), and every failure turned into an APIError whose
// words a person can act on.

export class APIError extends Error {
  constructor(status, code, message, retryAfter) {
    super(message);
    this.status = status; // 0: feedd did not answer
    this.code = code;
    this.retryAfter = retryAfter; // seconds, from Retry-After; 0 when absent
  }
}

// client returns call(method, path, body?, headers?) → the decoded JSON
// (null for 204), with token as the bearer. With a signal, the calls end
// when it aborts, rejecting with the signal's AbortError (see isAbort).
export function client(token, signal) {
  return async function call(method, path, body, headers = {}) {
    const h = { ...headers };
    if (token) h.Authorization = 'Bearer ' + token;
    const init = { method, headers: h, cache: 'no-store', signal };
    if (body !== undefined) {
      h['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    let res;
    try {
      res = await fetch(path, init);
    } catch (e) {
      if (signal && signal.aborted) throw e; // not a failure: nobody waits for the answer
      throw new APIError(0, 'unreachable', 'feedd is not answering: check that it is running, then try again.', 0);
    }
    if (res.status === 204) return null;
    let data = null;
    try {
      data = await res.json();
    } catch (e) {
      if (signal && signal.aborted) throw e;
      data = null;
    }
    if (res.ok) return data;
    const err = (data && data.error) || {};
    const retry = parseInt(res.headers.get('Retry-After') || '0', 10) || 0;
    throw new APIError(res.status, err.code || 'http_' + res.status, err.message || res.statusText, retry);
  };
}

// isAbort reports whether err is the end of a call whose signal aborted.
export function isAbort(err) {
  return !!err && err.name === 'AbortError';
}

// describe puts an error in words for the person at the screen.
export function describe(err) {
  if (!(err instanceof APIError)) return 'Something went wrong: ' + (err && err.message ? err.message : err);
  const when = err.retryAfter ? retryWords(err.retryAfter) : 'in a moment';
  switch (err.status) {
    case 0:
      return err.message;
    case 401:
      // feedd says what is wrong with the token: malformed, a signature
      // that does not verify, expired, revoked, or its user deleted.
      return 'Your token is not accepted: ' + err.message + '. Sign in again.';
    case 403:
      return 'Not allowed: ' + err.message;
    case 404:
      return 'Not found: ' + err.message;
    case 429:
      return 'Too many requests: slow down and try again ' + when + '.';
    case 503:
      return 'feedd cannot do this right now (' + err.message + '). Try again ' + when + '.';
  }
  if (err.status >= 500) return 'feedd failed to answer (' + err.message + '). Try again ' + when + '.';
  return err.message;
}

function retryWords(s) {
  const at = new Date(Date.now() + s * 1000).toLocaleTimeString();
  return s === 1 ? 'in 1 second (at ' + at + ')' : 'in ' + s + ' seconds (at ' + at + ')';
}
