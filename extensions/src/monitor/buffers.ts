// Binary buffers arrive as ArrayBuffer, DataView or a typed array depending on the host (anywidget
// hands DataViews); typed-array views need aligned offsets, so unaligned input is copied once.
export type BufferLike = ArrayBuffer | ArrayBufferView;

function view<T>(b: BufferLike, bytes: number, make: (buf: ArrayBuffer, off: number, len: number) => T): T {
  if (b instanceof ArrayBuffer) return make(b, 0, Math.floor(b.byteLength / bytes));
  const off = b.byteOffset, len = Math.floor(b.byteLength / bytes);
  if (off % bytes === 0) return make(b.buffer as ArrayBuffer, off, len);
  return make((b.buffer as ArrayBuffer).slice(off, off + len * bytes), 0, len);
}

export const asFloat32 = (b: BufferLike) => view(b, 4, (buf, o, n) => new Float32Array(buf, o, n));
export const asUint32 = (b: BufferLike) => view(b, 4, (buf, o, n) => new Uint32Array(buf, o, n));
