// The ErrorInfo of a failed gRPC call: the `reason` and `field` the service puts in the
// grpc-status-details-bin trailer (a google.rpc.Status), read with a few lines of protobuf
// wire format rather than a dependency. Used by play.js and lib/watch.js.
'use strict';

/** Protocol buffers' wire format, just enough for google.rpc.Status: each field of
 *  `bytes` as [number, value], a varint's value a number, a length-delimited one bytes. */
function* wireFields(bytes) {
  let at = 0;
  const varint = () => {
    let value = 0;
    for (let shift = 0; ; shift += 7) {
      const byte = bytes[at++];
      if (byte === undefined) throw new Error('truncated varint');
      value += (byte & 0x7f) * 2 ** shift;
      if (byte < 0x80) return value;
    }
  };
  while (at < bytes.length) {
    const key = varint();
    const type = key % 8;
    if (type === 0) yield [Math.floor(key / 8), varint()];
    else if (type === 2) {
      const length = varint();
      yield [Math.floor(key / 8), bytes.subarray(at, at + length)];
      at += length;
    } else if (type === 1 || type === 5) at += type === 1 ? 8 : 4;
    else throw new Error(`wire type ${type}`);
  }
}

const ERROR_INFO = 'type.googleapis.com/google.rpc.ErrorInfo';
const BAD_REQUEST = 'type.googleapis.com/google.rpc.BadRequest';

/** The ErrorInfo reason (and the BadRequest field, else ErrorInfo's metadata "field") of a
 *  failed call's grpc-status-details-bin trailer: { reason, field }, "" when absent. */
function errorInfo(trailers) {
  const found = { reason: '', field: '' };
  const [status] = trailers ? trailers.get('grpc-status-details-bin') : [];
  if (!status) return found;
  const text = (b) => Buffer.from(b).toString('utf8');
  try {
    for (const [number, any] of wireFields(status)) {
      if (number !== 3) continue; // Status.details: google.protobuf.Any
      let type = '';
      let value = new Uint8Array();
      for (const [n, v] of wireFields(any)) {
        if (n === 1) type = text(v);
        else if (n === 2) value = v;
      }
      for (const [n, v] of wireFields(value)) {
        if (type === ERROR_INFO && n === 1) found.reason = text(v);
        else if (type === ERROR_INFO && n === 3) { // metadata: map<string, string> entries
          const entry = Object.fromEntries([...wireFields(v)].map(([k, x]) => [k, text(x)]));
          if (entry[1] === 'field' && !found.field) found.field = entry[2] || '';
        } else if (type === BAD_REQUEST && n === 1) { // a FieldViolation
          for (const [k, x] of wireFields(v)) if (k === 1) found.field = text(x);
        }
      }
    }
  } catch {
    return found; // a trailer that is not a Status: the code and message still say it
  }
  return found;
}

module.exports = { errorInfo, wireFields };
