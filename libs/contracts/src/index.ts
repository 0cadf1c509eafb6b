export { topology } from './topology';
export type { Topology } from './topology';
export { eventSchema, metadataSchema } from './envelope';
export type { Versioned, DistributiveOmit } from './envelope';
export { taskEventSchema, sandboxCommandEventSchema, taskReceiptSchema } from './task.schemas';
export { conversationEventSchema } from './conversation.schemas';
export { decodeTaskEvent, decodeSandboxCommandEvent, decodeConversationEvent, encodeEvent, registerUpcaster, MalformedEvent, CURRENT_VERSION, CURRENT_VERSIONS, currentVersionOf } from './codec';
import './upcasters';
export { taskStoppingV1, taskStoppingV2 } from './conversation.schemas';
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
export { CONDITION_LIMITS, waitUntilSchema, waitConditionSchema, compileOutputPattern, conditionRefusal, scanLines } from './wait-conditions';
export type { WaitCondition, WaitUntil, ScanCarry } from './wait-conditions';
export type { Config } from './config';
export { markDeliveredRequestSchema, markDeliveredReplySchema } from './delivery.schemas';
export type { MarkDeliveredRequest, MarkDeliveredReply } from './delivery.schemas';
export type { TaskView, TaskReceipt, RunView, TodoView, QueueEntryView, CommandView, LogIndexEntryView } from './api.types';
export { STDIN_MAX_BYTES, writeStdinRequestSchema, writeStdinReplySchema } from './stdin.schemas';
export type { WriteStdinRequest, WriteStdinReply } from './stdin.schemas';
export { PROJECTIONS, PROJECTION_NAMES, projectionRebuildSubject, projectionRebuildReplySchema } from './projections';
export type { ProjectionInfo, ProjectionRebuildReply } from './projections';
