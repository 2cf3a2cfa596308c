// A replayable run (docs/runtime.md, "Replayable runs (approvals)"): what the program reads that
// is not its own comes from the request, so a replay reads the same values in the same order.
// installReplay() runs at the start of such a run only (runtime.js's beginRun): Math.random
// draws from the seeded generator (natives/seeded.rs; crypto's randomness is seeded there too),
// and Date, Date.now, Intl.DateTimeFormat's "now" and Temporal.Now read the logical clock of
// web/timers.js.
// A run without it is left as the engine made it.
(function (load) {
'use strict';
const { natives } = load('natives.js');
const { logicalDateNow } = load('web/timers.js');
const {
  DateCtor, ObjectDefineProperty, ReflectConstruct, ReflectGetOwnPropertyDescriptor, WeakMapCtor, call, dateToString,
} = load('primordials.js');
const weakMapGet = WeakMapCtor.prototype.get;
const weakMapSet = WeakMapCtor.prototype.set;

const seededRandom = natives.seededRandom;
const method = { writable: true, enumerable: false, configurable: true };

// Date with the logical clock: `new Date()` and `Date()` read it, `Date.now()` too; every other
// form is the engine's. It shares the engine's prototype, so instanceof and subclasses hold.
function makeDate() {
  const EngineDate = DateCtor;
  // biome-ignore lint/suspicious/noShadowRestrictedNames: the replacement is named Date, as Date.name is
  const Date = function Date(...args) {
    if (new.target === undefined) return call(dateToString, new EngineDate(logicalDateNow()));
    return ReflectConstruct(EngineDate, args.length === 0 ? [logicalDateNow()] : args, new.target);
  };
  ObjectDefineProperty(Date, 'length', { value: 7, configurable: true });
  ObjectDefineProperty(Date, 'prototype', { value: EngineDate.prototype, writable: false });
  ObjectDefineProperty(Date, 'now', { value: { now() { return logicalDateNow(); } }.now, ...method });
  ObjectDefineProperty(Date, 'parse', { value: EngineDate.parse, ...method });
  ObjectDefineProperty(Date, 'UTC', { value: EngineDate.UTC, ...method });
  ObjectDefineProperty(EngineDate.prototype, 'constructor', { value: Date, ...method });
  return Date;
}

// Intl.DateTimeFormat formats "now" when given no date: the logical now, as Date's.
function seedIntl() {
  if (typeof Intl !== 'object' || Intl === null || typeof Intl.DateTimeFormat !== 'function') return;
  const proto = Intl.DateTimeFormat.prototype;
  const formatGetter = ReflectGetOwnPropertyDescriptor(proto, 'format').get;
  const formatToParts = proto.formatToParts;
  // One bound function per formatter, as the engine's getter gives.
  const bound = new WeakMapCtor();
  ObjectDefineProperty(proto, 'format', {
    get() {
      const format = call(formatGetter, this);
      let wrapped = call(weakMapGet, bound, format);
      if (wrapped === undefined) {
        wrapped = (date) => format(date === undefined ? logicalDateNow() : date);
        call(weakMapSet, bound, format, wrapped);
      }
      return wrapped;
    },
    enumerable: false,
    configurable: true,
  });
  ObjectDefineProperty(proto, 'formatToParts', {
    value: {
      formatToParts(date) {
        return call(formatToParts, this, date === undefined ? logicalDateNow() : date);
      },
    }.formatToParts,
    ...method,
  });
}

// Temporal.Now with the logical clock: every "now" it gives is the logical instant (to the
// millisecond, as Date's), in the zone asked for or the engine's own (fixed for a worker).
function seedTemporal() {
  if (typeof Temporal !== 'object' || Temporal === null) return;
  const now = Temporal.Now;
  const Instant = Temporal.Instant;
  // Nanoseconds from the logical clock's milliseconds, which advance by a microsecond a read.
  const fromEpochNanoseconds = Instant.fromEpochNanoseconds;
  const BigIntCtor = BigInt;
  const round = Math.round;
  const toZoned = Instant.prototype.toZonedDateTimeISO;
  const zoned = ReflectGetOwnPropertyDescriptor(Temporal.ZonedDateTime.prototype, 'toPlainDateTime').value;
  const toDate = ReflectGetOwnPropertyDescriptor(Temporal.ZonedDateTime.prototype, 'toPlainDate').value;
  const toTime = ReflectGetOwnPropertyDescriptor(Temporal.ZonedDateTime.prototype, 'toPlainTime').value;
  const timeZoneId = now.timeZoneId;
  const instant = () => call(fromEpochNanoseconds, Instant, BigIntCtor(round(logicalDateNow() * 1000)) * 1000n);
  const zonedNow = (zone) => call(toZoned, instant(), zone === undefined ? call(timeZoneId, now) : zone);
  const methods = {
    instant() { return instant(); },
    zonedDateTimeISO(zone) { return zonedNow(zone); },
    plainDateTimeISO(zone) { return call(zoned, zonedNow(zone)); },
    plainDateISO(zone) { return call(toDate, zonedNow(zone)); },
    plainTimeISO(zone) { return call(toTime, zonedNow(zone)); },
  };
  for (const name of ['instant', 'zonedDateTimeISO', 'plainDateTimeISO', 'plainDateISO', 'plainTimeISO']) {
    ObjectDefineProperty(now, name, { value: methods[name], ...method });
  }
}

function installReplay() {
  ObjectDefineProperty(Math, 'random', { value: { random() { return seededRandom(); } }.random, ...method });
  ObjectDefineProperty(globalThis, 'Date', { value: makeDate(), ...method });
  seedIntl();
  seedTemporal();
}

return { installReplay };
})
