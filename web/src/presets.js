// Task presets: what the composer sends for each task, and how it samples.

export const PRESETS = [
  { id: 'ask', label: 'Ask', placeholder: 'Ask about the images…' },
  { id: 'describe', label: 'Describe', placeholder: 'Optional: what to focus on…' },
  { id: 'ocr', label: 'Read text', placeholder: 'Optional: which part to read…' },
  { id: 'ground', label: 'Find objects', placeholder: 'What to find, e.g. cats, red cars…' },
];

export const OCR_PROMPT =
  'Read all the text in the image and write it out exactly as it appears, verbatim: keep the ' +
  'original spelling, punctuation, capitalisation, numbers, line breaks and reading order. ' +
  'Do not translate, correct, summarise or explain anything, and do not add text that is not ' +
  'in the image. Output only the extracted text.';

export function groundingPrompt(what) {
  const target = what.trim() || 'every distinct object';
  return `Locate ${target} in the image and output the bounding box of each one as JSON: ` +
    '[{"bbox_2d": [x1, y1, x2, y2], "label": "name"}], with coordinates relative to the image ' +
    'on a 0 to 1000 scale.';
}

// The text sent to the model for a user turn.
export function promptFor(preset, text) {
  const extra = text.trim();
  switch (preset) {
    case 'describe':
      return extra ? `Describe this image in detail. Focus on: ${extra}` : 'Describe this image in detail.';
    case 'ocr':
      return extra ? `${OCR_PROMPT}\nOnly this part: ${extra}` : OCR_PROMPT;
    case 'ground':
      return groundingPrompt(extra);
    default:
      return text;
  }
}

// Sampling overrides a preset forces: text extraction and boxes are read greedily.
export function presetSampling(preset) {
  return preset === 'ocr' || preset === 'ground' ? { temperature: 0 } : {};
}

export const presetLabel = (id) => (PRESETS.find((p) => p.id === id) || PRESETS[0]).label;
