// The rules' rejections: a stable machine-readable reason (the same as the service's
// ofc.errors), a message, and `field`, the offending input relative to the action or
// document being read ("placements[0].card", "top[1]", "seat", "" for the whole thing).
'use strict';

class OfcError extends Error {
  constructor(reason, message, field = '') {
    super(message);
    this.name = 'OfcError';
    this.reason = reason;
    this.field = field;
  }
}

function ofcError(reason, message, field = '') {
  return new OfcError(reason, message, field);
}

module.exports = { OfcError, ofcError };
