// @ts-check
// The HTTP client for /api (API.md). Errors become ApiError with the server's code and
// sentence. With API_TOKEN set on the server, the first 401 asks the person for the token
// once (one dialog however many requests failed), keeps it in sessionStorage for the tab
// and sends it as `Authorization: Bearer`; the WebSocket takes it as `?token=`.

const TOKEN_KEY = "agent-sessions.token";

export class ApiError extends Error {
  constructor(status, code, message, details = {}, retryAfter = null) {
    super(message);
    this.status = status;
    this.code = code;
    this.details = details || {};
    this.retryAfter = retryAfter;
  }
}

export function getToken() {
  try {
    return sessionStorage.getItem(TOKEN_KEY);
  } catch {
    return null;
  }
}

function setToken(value) {
  try {
    sessionStorage.setItem(TOKEN_KEY, value);
  } catch {
    /* storage disabled: the token lives only as long as this page */
  }
}

let asking = null;

/** Ask for the token (one dialog for every caller waiting on it). Resolves when the
 * person entered one; rejects when they dismissed the dialog. */
export function askToken(refused = false) {
  if (!asking) {
    asking = openTokenDialog(refused).finally(() => { asking = null; });
  }
  return asking;
}

function openTokenDialog(refused) {
  const dialog = /** @type {HTMLDialogElement} */ (document.getElementById("token-dialog"));
  const form = dialog.querySelector("form");
  const input = dialog.querySelector("input");
  const note = /** @type {HTMLElement} */ (dialog.querySelector(".token-error"));
  note.hidden = !refused;
  input.value = "";
  return new Promise((resolve, reject) => {
    const onSubmit = (event) => {
      event.preventDefault();
      const value = input.value.trim();
      if (!value) {
        input.focus();
        return;
      }
      setToken(value);
      done();
      dialog.close();
      resolve(value);
    };
    const onCancel = () => {
      done();
      reject(new ApiError(401, "unauthorized", "The server needs an access token."));
    };
    const done = () => {
      form.removeEventListener("submit", onSubmit);
      dialog.removeEventListener("cancel", onCancel);
      dialog.querySelector(".token-cancel").removeEventListener("click", cancelClick);
    };
    const cancelClick = () => {
      dialog.close();
      onCancel();
    };
    form.addEventListener("submit", onSubmit);
    dialog.addEventListener("cancel", onCancel);
    dialog.querySelector(".token-cancel").addEventListener("click", cancelClick);
    dialog.showModal();
    input.focus();
  });
}

/** One API call. `body` undefined → no body. Returns parsed JSON (null for 204), or what
 * `read` makes of a successful response (a file's bytes). */
export async function api(method, path, body, read = null) {
  for (;;) {
    const headers = { Accept: "application/json" };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    const token = getToken();
    if (token) headers.Authorization = `Bearer ${token}`;
    let response;
    try {
      response = await fetch(path, {
        method, headers, body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch {
      throw new ApiError(0, "network_error", "The server cannot be reached right now. Is it running?");
    }
    if (response.status === 401) {
      await askToken(Boolean(token));
      continue;
    }
    if (response.status === 204) return null;
    if (read && response.ok) return read(response);
    let data = null;
    try {
      data = await response.json();
    } catch {
      data = null;
    }
    if (!response.ok) {
      const err = (data && data.error) || {};
      const retry = Number(response.headers.get("Retry-After")) || null;
      throw new ApiError(
        response.status, err.code || `http_${response.status}`,
        err.message || `The server answered ${response.status} ${response.statusText}.`,
        err.details, retry,
      );
    }
    return data;
  }
}

export const get = (path) => api("GET", path);
/** A file of a session (API.md, Review): its text, or null with `binary` when it is not text. */
export const getFile = (path) => api("GET", path, undefined, async (response) => {
  const binary = (response.headers.get("Content-Type") || "").startsWith("application/octet-stream");
  const bytes = await response.arrayBuffer();
  return { binary, size: bytes.byteLength, text: binary ? null : new TextDecoder().decode(bytes) };
});
export const post = (path, body = {}) => api("POST", path, body);
export const del = (path) => api("DELETE", path);

export function query(params) {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== "") search.set(key, value);
  }
  const text = search.toString();
  return text ? `?${text}` : "";
}

/** The error as a sentence a person can act on. */
export function describe(err) {
  if (!(err instanceof ApiError)) return String(err?.message || err);
  const d = err.details || {};
  switch (err.code) {
    case "path_outside_workspace":
      return `${err.message} Only directories inside the server's workspace root (AGENT_WORKSPACE_ROOT) can be registered.`;
    case "repo_already_registered":
      return "This directory is already registered; pick it from the list.";
    case "session_limit_reached": {
      const wait = err.retryAfter || 60;
      return `${err.message} You can try again in ${wait} seconds.`;
    }
    case "agent_start_failed": {
      const exit = d.exitCode !== undefined && d.exitCode !== null ? ` (exit code ${d.exitCode})` : "";
      return `${err.message}${exit}`;
    }
    case "turn_in_progress":
      return "The agent is still working on the previous prompt. Wait for it or press Stop.";
    case "session_not_active":
      return "This session has ended; it no longer takes prompts.";
    case "payload_too_large":
      return `${err.message} Send something shorter.`;
    case "validation_error":
      return err.message;
    case "unauthorized":
      return "The server needs an access token. Reload the page to enter it.";
    default:
      return err.message;
  }
}
