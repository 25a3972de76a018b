// PDFs written by hand for the node tests (server and CLI): `pages` is a list of
// {width, height, content}; Helvetica is object 3, as /F1 on every page.
export function makePdf(pages) {
  const objects = ['', '', '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>'];
  const kids = [];
  for (const page of pages) {
    objects.push(`<< /Length ${Buffer.byteLength(page.content, 'latin1')} >>\nstream\n${page.content}\nendstream`);
    const content = objects.length;
    objects.push(`<< /Type /Page /Parent 2 0 R /MediaBox [0 0 ${page.width ?? 612} ${page.height ?? 792}] ` +
                 `/Resources << /Font << /F1 3 0 R >> >> /Contents ${content} 0 R >>`);
    kids.push(`${objects.length} 0 R`);
  }
  objects[0] = '<< /Type /Catalog /Pages 2 0 R >>';
  objects[1] = `<< /Type /Pages /Kids [${kids.join(' ')}] /Count ${pages.length} >>`;
  let out = '%PDF-1.7\n';
  const offsets = [];
  objects.forEach((body, i) => {
    offsets.push(Buffer.byteLength(out, 'latin1'));
    out += `${i + 1} 0 obj\n${body}\nendobj\n`;
  });
  const xref = Buffer.byteLength(out, 'latin1');
  out += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`;
  for (const offset of offsets) out += `${String(offset).padStart(10, '0')} 00000 n \n`;
  out += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(out, 'latin1');
}

export const pdfText = (x, y, size, s) => `BT /F1 ${size} Tf ${x} ${y} Td (${s}) Tj ET\n`;

// An invoice (Letter) and a parcel label (300 x 200 points).
export const twoPagePdf = () => makePdf([
  { content: pdfText(72, 700, 24, 'Invoice 2026-0042') + pdfText(72, 660, 12, 'Total: 24.40') },
  { width: 300, height: 200, content: pdfText(20, 100, 14, 'Parcel label 7') },
]);

// Content behind four chained RunLengthDecode filters: 4 KiB that would expand to 68 GB; rendering
// it runs until the time limit (--max-document-seconds).
export const runLengthBombPdf = () => Buffer.concat([
  Buffer.from('%PDF-1.7\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n' +
              '2 0 obj\n<< /Type /Pages /Kids [3 0 R] /Count 1 >>\nendobj\n' +
              '3 0 obj\n<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>\nendobj\n' +
              '4 0 obj\n<< /Filter [/RunLengthDecode /RunLengthDecode /RunLengthDecode /RunLengthDecode] ' +
              '/Length 4096 >>\nstream\n', 'latin1'),
  Buffer.alloc(4096, 0x81),
  Buffer.from('\nendstream\nendobj\ntrailer\n<< /Root 1 0 R >>\n%%EOF\n', 'latin1'),
]);
