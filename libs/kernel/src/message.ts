/**
 * Every message is `{type, data, metadata}`: events past tense, commands imperative.
 * Time and identity of the actor travel in metadata, never read from globals.
 */
export interface Metadata {
  /** ISO-8601 time at which the message was created. */
  readonly at: string;
  /** User id (or `system:<service>`) on whose behalf this happened. */
  readonly actor?: string;
  /** W3C traceparent, when a trace is active. */
  readonly traceparent?: string;
}

/** A typed message with a literal `type`. */
export interface Message<T extends string, D> {
  readonly type: T;
  readonly data: D;
  readonly metadata: Metadata;
}

/** The decider shape (emmett): pure functions over a state union. */
export interface Decider<State, Command, Event> {
  initialState(): State;
  evolve(state: State, event: Event): State;
  /** Returns the events that the command produces, or throws a DomainError. */
  decide(command: Command, state: State): Event[];
}

/** Folds a history into state. */
export function fold<S, E>(decider: Pick<Decider<S, unknown, E>, 'initialState' | 'evolve'>, events: readonly E[]): S {
  return events.reduce((s, e) => decider.evolve(s, e), decider.initialState());
}
