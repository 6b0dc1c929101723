// A qcow2 image header (version 3, 48 MiB virtual), enough for libvirt's
// format probe and for the model's; the real suites make theirs with qemu-img.
export function qcow2Header(virtualBytes = 48 * 1024 ** 2, total = 196_616): Buffer {
  const b = Buffer.alloc(total);
  b.write('QFI\xfb', 0, 'latin1');
  b.writeUInt32BE(3, 4);
  b.writeBigUInt64BE(BigInt(virtualBytes), 24);
  b.writeUInt32BE(16, 20); // cluster bits
  return b;
}
