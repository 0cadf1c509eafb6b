import { ValidationError } from '@handplane/kernel';

/**
 * An offset past the bytes the runner has (gRPC OUT_OF_RANGE). A ValidationError to the rest of
 * the system; the gRPC mapping tells it apart because a reader may retry it later with a lower offset.
 */
export class OffsetOutOfRange extends ValidationError {
  constructor(readonly offset: number, readonly available: number, what = 'offset') {
    super(`${what} ${offset} is beyond the ${available} bytes of output`, [`${what} out of range`]);
  }
}

/** An offset below what Ack released (its disk blocks were given back): also OUT_OF_RANGE. */
export class OffsetReleased extends OffsetOutOfRange {
  constructor(offset: number, readonly releasedBelow: number) {
    super(offset, releasedBelow, 'fromOffset');
    this.message = `fromOffset ${offset} is below ${releasedBelow}: those bytes were acknowledged and their spool space released`;
  }
}
