// How many tokens the server will spend on an image: the same smart resize as the server's
// (src/image/smart_resize.cpp, Qwen-VL's) and the same sharing of the request's image budget
// (share_image_budget in src/server/chat_request.cpp), so the page can show the cost up front.

export const MAX_ASPECT_RATIO = 200;

// Python's round(): ties go to the even neighbour.
function roundHalfEven(x) {
  const floor = Math.floor(x);
  const diff = x - floor;
  if (diff > 0.5 || (diff === 0.5 && floor % 2 !== 0)) return floor + 1;
  return floor;
}

// [height, width] the server resizes an image to; null where it refuses the image.
export function smartResize(height, width, factor, minPixels, maxPixels) {
  if (height <= 0 || width <= 0) return null;
  if (Math.max(height, width) / Math.min(height, width) > MAX_ASPECT_RATIO) return null;
  let h = roundHalfEven(height / factor) * factor;
  let w = roundHalfEven(width / factor) * factor;
  const area = height * width;
  if (h * w > maxPixels) {
    const beta = Math.sqrt(area / maxPixels);
    h = Math.max(factor, Math.floor(height / beta / factor) * factor);
    w = Math.max(factor, Math.floor(width / beta / factor) * factor);
  } else if (h * w < minPixels) {
    const beta = Math.sqrt(minPixels / area);
    h = Math.ceil((height * beta) / factor) * factor;
    w = Math.ceil((width * beta) / factor) * factor;
  }
  return h > 0 && w > 0 ? [h, w] : null;
}

// The token budget one image gets for a detail level ('auto', 'low', 'high').
export function detailBudget(detail, image) {
  if (detail === 'low' && image.low_detail_max_tokens) return image.low_detail_max_tokens;
  if (detail === 'high' && image.high_detail_max_tokens) return image.high_detail_max_tokens;
  return image.max_tokens || 1280;
}

// Tokens for each of `images` ([{ width, height, detail }]) sent together in one request, as
// the server computes them; `image` is GET /props' "image" object. null for a refused image.
export function estimateImageTokens(images, image = {}) {
  if (!images.length) return [];
  const pixelsPerToken = image.pixels_per_token || 1024;
  const factor = Math.round(Math.sqrt(pixelsPerToken));
  const share = image.max_total_tokens ? Math.floor(image.max_total_tokens / images.length) : Infinity;
  return images.map(({ width, height, detail }) => {
    let max = detailBudget(detail || 'auto', image);
    if (max <= 0 || max > share) max = share;
    const min = image.min_tokens > 0 ? Math.min(image.min_tokens, max) : 0;
    const size = smartResize(height, width, factor, min * pixelsPerToken, max * pixelsPerToken);
    return size ? (size[0] / factor) * (size[1] / factor) : null;
  });
}
