export { DomainError, NotFound, IllegalState, Conflict, ValidationError, Unavailable, Unauthorized, Forbidden, TooLarge, isDomainError } from './errors';
export type { DomainErrorCode } from './errors';
export { assertNever } from './assert';
export { FixedClock } from './clock';
export type { Clock } from './clock';
export { fold } from './message';
export type { Message, Metadata, Decider } from './message';
