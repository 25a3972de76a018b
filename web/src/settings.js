// The settings dialog. Empty number fields mean "the server's default", which the placeholders
// show (from GET /props); values are saved in localStorage by the caller.

const FIELDS = [
  ['set-temperature', 'temperature', 'temperature'],
  ['set-top-p', 'top_p', 'top_p'],
  ['set-top-k', 'top_k', 'top_k'],
  ['set-max-tokens', 'max_tokens', 'max_tokens'],
  ['set-seed', 'seed', null],
  ['set-history', 'history', null],
];

let hooks = null;
const $ = (id) => document.getElementById(id);

function fill() {
  const settings = hooks.getSettings();
  const props = hooks.getProps();
  const defaults = (props && props.default_sampling) || {};
  for (const [id, key, defaultKey] of FIELDS) {
    const input = $(id);
    input.value = settings[key] ?? '';
    if (defaultKey && defaults[defaultKey] !== undefined) {
      const value = defaults[defaultKey];
      const shown = Number.isInteger(value) ? value : Number(value.toFixed(3));
      input.placeholder = defaultKey === 'top_k' && !value ? 'off (default)' : `${shown} (default)`;
    }
  }
  if (props && props.context_length) $('set-max-tokens').max = String(props.context_length);
  $('set-system').value = settings.system || '';
  $('set-api-key').value = settings.apiKey || '';
  const image = (props && props.image) || {};
  const select = $('set-detail');
  const tokens = (n) => (n ? ` (up to ${n} tokens per image)` : '');
  select.replaceChildren(...[
    ['auto', `Auto${tokens(image.max_tokens)}`],
    ['low', `Low: faster${tokens(image.low_detail_max_tokens)}`],
    ['high', `High: small text, details${tokens(image.high_detail_max_tokens)}`],
  ].map(([value, label]) => {
    const option = document.createElement('option');
    option.value = value;
    option.textContent = label;
    return option;
  }));
  select.value = settings.detail || 'auto';
  $('set-theme').value = settings.theme || '';
}

function read() {
  const settings = {};
  for (const [id, key] of FIELDS) {
    const input = $(id);
    if (input.value !== '' && input.checkValidity()) settings[key] = Number(input.value);
  }
  const system = $('set-system').value;
  if (system.trim()) settings.system = system;
  const apiKey = $('set-api-key').value.trim();
  if (apiKey) settings.apiKey = apiKey;
  const detail = $('set-detail').value;
  if (detail !== 'auto') settings.detail = detail;
  const theme = $('set-theme').value;
  if (theme) settings.theme = theme;
  return settings;
}

export function openSettings() {
  const dialog = $('settings');
  if (dialog.open) return;
  fill();
  dialog.showModal();
  $('set-system').focus();
}

export function initSettings(callbacks) {
  hooks = callbacks;
  const dialog = $('settings');
  const form = $('settings-form');
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const invalid = [...form.querySelectorAll('input')].find((input) => !input.checkValidity());
    if (invalid) {
      invalid.reportValidity();
      return;
    }
    hooks.onSave(read());
    dialog.close();
  });
  $('settings-close').addEventListener('click', () => dialog.close());
  $('settings-reset').addEventListener('click', () => {
    const { apiKey, theme } = hooks.getSettings();
    hooks.onSave({ ...(apiKey ? { apiKey } : {}), ...(theme ? { theme } : {}) });
    fill();
  });
  dialog.addEventListener('click', (e) => { if (e.target === dialog) dialog.close(); });
}

// Light or dark as chosen, else as the system.
export function applyTheme(theme) {
  if (theme === 'light' || theme === 'dark') document.documentElement.dataset.theme = theme;
  else delete document.documentElement.dataset.theme;
}
