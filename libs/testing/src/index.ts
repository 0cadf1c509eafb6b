export { freshDatabase, prepareTemplateDatabase, PG_SERVER, TEMPLATE_DB } from './database';
export { testNats, uniquePrefix, NATS_URL } from './nats';
export { waitFor } from './wait';
