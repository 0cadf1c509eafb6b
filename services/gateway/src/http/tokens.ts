/** Injection tokens of the gateway's Nest edge (values are plain objects built in service.ts). */
export const LOGGER = Symbol('LOGGER');
export const TOKEN_VERIFIER = Symbol('TOKEN_VERIFIER');
export const CONVERSATIONS_APP = Symbol('CONVERSATIONS_APP');
export const TASKS_APP = Symbol('TASKS_APP');
export const FEED_OPENER = Symbol('FEED_OPENER');
export const SSE_SETTINGS = Symbol('SSE_SETTINGS');
export const RATE_LIMITER = Symbol('RATE_LIMITER');
export const SSE_TICKETS = Symbol('SSE_TICKETS');
export const STOPS_APP = Symbol('STOPS_APP');
export const PROMPTS_APP = Symbol('PROMPTS_APP');
export const AUDIT_APP = Symbol('AUDIT_APP');
export const READ_MODELS_APP = Symbol('READ_MODELS_APP');
export const STDIN_APP = Symbol('STDIN_APP');
export const ADMIN_TOKEN = Symbol('ADMIN_TOKEN');
export const PROJECTIONS_ADMIN_APP = Symbol('PROJECTIONS_ADMIN_APP');
