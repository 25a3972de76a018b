// Files the user adds (picker, drop, paste) into the composer: images are prepared in the page
// (images.js); videos and documents are checked against the server's limits and previewed by
// it (media.js). Notices say what was changed or refused, and why.
import { MAX_ASPECT_RATIO } from './tokens.js';
import { mediaKind } from './media.js';

function imageLimits(props) {
  const image = (props && props.image) || {};
  const tokens = Math.max(image.high_detail_max_tokens || 1280, image.max_tokens || 0);
  return {
    maxPixels: tokens * (image.pixels_per_token || 1024) * 2,
    maxBytes: Math.floor((image.max_image_bytes || 16 << 20) * 0.7),
    maxCount: image.max_images_per_request || 8,
    maxAspect: MAX_ASPECT_RATIO,
  };
}

// How many of a kind one request may carry.
function mediaCount(kind, props) {
  if (kind === 'video') return (props && props.video && props.video.max_videos_per_request) || 2;
  return (props && props.document && props.document.max_documents_per_request) || 4;
}

// File names in notices: long ones keep their start and their extension.
const shortName = (name) => (name.length > 48 ? `${name.slice(0, 32)}…${name.slice(-12)}` : name);

// What a file is by its type alone ('image', 'video', 'document'), so its tile appears at
// once; null when only its bytes can tell (no type, or a generic one).
function kindByType(type) {
  if (type === 'application/pdf' || type === 'image/tiff') return 'document';
  if (type.startsWith('video/')) return 'video';
  if (type.startsWith('image/')) return 'image';
  return null;
}

// `app`: { state, notice, renderComposer }.
export function addFiles(files, { state, notice, renderComposer }) {
  const limits = imageLimits(state.props);
  const conversation = state.current;
  const rerender = () => { if (state.current === conversation) renderComposer(); };
  const done = (entry, error, duplicate) => {
    if (duplicate) notice(`${shortName(entry.name)} is attached already.`);
    else if (error) notice(`Could not add ${shortName(entry.name)}: ${error.message.replace(entry.name, 'it')}.`);
    else if (!entry.image.kind) {
      const p = entry.prepared;
      if (p.converted) notice(`${shortName(p.name)} was converted from ${p.converted} to PNG (the server reads JPEG, PNG, WebP, GIF and BMP).`);
      if (p.padded) notice(`${shortName(p.name)} is ${p.originalWidth}×${p.originalHeight}, thinner than the ${MAX_ASPECT_RATIO}:1 the model accepts: it was padded to ${p.width}×${p.height}.`);
      else if (p.scaled) notice(`${shortName(p.name)} was scaled to ${p.width}×${p.height}, the most the model can use.`);
    }
    rerender();
  };
  // Returns false when no more files fit this message.
  const add = (file, kind) => {
    const attached = state.attachments.of(conversation.id);
    if (kind === 'image') {
      if (attached.filter((e) => !e.kind).length >= limits.maxCount) {
        notice(`At most ${limits.maxCount} images per message.`);
        return false;
      }
      state.attachments.add(file, conversation.id, limits, done, rerender);
    } else {
      const max = mediaCount(kind, state.props);
      if (attached.filter((e) => e.kind === kind).length >= max) {
        notice(`At most ${max} ${kind}s per message.`);
        return true;
      }
      state.attachments.addMedia(file, kind, conversation.id, state.props, state.settings.apiKey, done);
    }
    rerender();
    return true;
  };
  for (const file of files) {
    const kind = kindByType(file.type || '');
    if (kind) {
      if (!add(file, kind)) break;
    } else {
      file.slice(0, 1024).arrayBuffer().then((head) => add(file, mediaKind(file, new Uint8Array(head)) || 'image'));
    }
  }
}
