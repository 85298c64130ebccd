// What the page keeps in the browser: the conversation and settings (local storage), the API key (this tab only).

const PREFIX = "agent-gateway.playground.";
export const CONVERSATION = PREFIX + "conversation";
export const SETTINGS = PREFIX + "settings";
const API_KEY = PREFIX + "api-key";

export function load(key, fallback) {
  try {
    const text = window.localStorage.getItem(key);
    return text === null ? fallback : JSON.parse(text);
  } catch (_) {
    return fallback;
  }
}

export function save(key, value) {
  try {
    window.localStorage.setItem(key, JSON.stringify(value));
  } catch (_) { /* storage full or disabled: the page still works, it just forgets */ }
}

// The API key lives in sessionStorage: it survives a reload of this tab, never another tab or a restart.
export const apiKey = {
  get: () => window.sessionStorage.getItem(API_KEY),
  set: (key) => window.sessionStorage.setItem(API_KEY, key),
  clear: () => window.sessionStorage.removeItem(API_KEY),
};
