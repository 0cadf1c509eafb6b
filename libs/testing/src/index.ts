export { freshDatabase, prepareTemplateDatabase, PG_SERVER, TEMPLATE_DB } from './database';
export { ensureConversation, testNats, uniquePrefix, NATS_URL } from './nats';
export { waitFor } from './wait';
export { readSse, SseParser, type SseItem } from './sse';
export { freePort } from './ports';
export { seededRandom } from './random';
