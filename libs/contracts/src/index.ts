export { topology } from './topology';
export type { Topology } from './topology';
export { eventSchema, metadataSchema } from './envelope';
export type { Versioned, DistributiveOmit } from './envelope';
export { taskEventSchema, sandboxCommandEventSchema } from './task.schemas';
export { conversationEventSchema } from './conversation.schemas';
export { decodeTaskEvent, decodeSandboxCommandEvent, decodeConversationEvent, encodeEvent, registerUpcaster, MalformedEvent, CURRENT_VERSION } from './codec';
export type { Upcaster } from './codec';
export {
  LIMITS,
  commandInputSchema,
  startTaskRequestSchema,
  startTaskReplySchema,
  validateTaskWaitRequestSchema,
  validateTaskWaitReplySchema,
  rpcErrorSchema,
  stopTaskRequestSchema,
  stopTaskReplySchema,
  stopAllRequestSchema,
  stopAllReplySchema,
} from './rpc.schemas';
export type { CommandInput, StartTaskRequest, StartTaskReply, ValidateTaskWaitRequest, ValidateTaskWaitReply, RpcError, StopTaskRequest, StopTaskReply, StopAllRequest, StopAllReply } from './rpc.schemas';
export { configSchema, loadConfig } from './config';
export type { Config } from './config';
export { markDeliveredRequestSchema, markDeliveredReplySchema } from './delivery.schemas';
export type { MarkDeliveredRequest, MarkDeliveredReply } from './delivery.schemas';
export type { TaskView } from './api.types';
