// The header's description of the model from /props.
const FORMAT_NAMES = { safetensors: 'safetensors', gguf: 'GGUF', qvl: 'pre-packed' };

// " · 2B · GGUF Q4_K_M → q8": the model's size, how its file stores the weights and, when it
// differs, the type they run as (a folder's BF16 runs as q8 by default).
export function modelLine(props) {
  let line = props.size ? ` · ${props.size}` : '';
  if (props.format) {
    line += ` · ${FORMAT_NAMES[props.format] || props.format} ${props.file_type || ''}`.trimEnd();
    if (props.quant && props.quant.toLowerCase() !== String(props.file_type).toLowerCase()) line += ` → ${props.quant}`;
  }
  return line;
}
