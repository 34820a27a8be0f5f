/**
 * @metaharness/events: the event model shared by every service. The registry of event types and
 * their payloads, ids, the validation every append passes, and the JSON of the HTTP API.
 * docs/events.md documents each type; a test keeps that page, event.proto and this package in step.
 */
export {
  EVENT_TYPES,
  isEventType,
  payloadCaseForType,
  payloadFieldForType,
  typeForPayloadCase,
  type EventPayload,
  type EventType,
  type EventTypeOf,
  type PayloadCase,
  type PayloadCaseOf,
  type PayloadFieldOf,
  type PayloadOf,
} from "./registry.js";
export { eventTypeOf, newEvent, payloadOf, type NewEventInit } from "./event.js";
export { MAX_WORKSPACE_PATH, isCheckoutName, mountPathKey, normalizeRepositoryUrl, repositoryMountPath, workspacePath } from "./repositories.js";
export { SESSION_EVENTS_MAX_MESSAGE_BYTES, SESSION_EVENTS_TOPIC } from "./topic.js";
export { SeqTracker, type SeqVerdict } from "./seq-tracker.js";
export { REPOSITORY_ERROR_TYPES, isRepositoryError, type RepositoryErrorType } from "./errors.js";
export {
  EVENT_ID_PREFIX,
  MAX_EVENT_ID_LENGTH,
  SESSION_ID_PREFIX,
  isValidEventId,
  isValidSessionId,
  requireSessionId,
  SESSION_ID_RULE,
  newEventId,
  newSessionId,
  timeOfId,
  contentBlockEventId,
} from "./ids.js";
export {
  DEFAULT_MAX_EVENT_BYTES,
  validateEventForAppend,
  type AppendValidationOptions,
  type ValidatedEvent,
} from "./validate/append.js";
export { MAX_INPUT_DEPTH } from "./validate/struct.js";
export { toManagedAgentsJson } from "./json/to-json.js";
export { USER_EVENT_TYPES, fromManagedAgentsParams, type UserEventType } from "./json/from-json.js";
export type * from "./json/types.js";
export { isSdkEventType, publicEventId, toSdkEventJson, type SdkEventJson, type SdkJsonOptions } from "./json/sdk.js";
export { unansweredToolUses, type PendingToolUse, type ToolUseKind } from "./pending.js";
export {
  MAX_PACKAGES_PER_MANAGER,
  MAX_PACKAGE_SPEC_LENGTH,
  PACKAGE_MANAGERS,
  hasPackages,
  normalizePackages,
  packageProblems,
  type PackageListsInput,
  type PackageManager,
  type PackageProblem,
} from "./packages.js";
