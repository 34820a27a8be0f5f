/**
 * The details our services put on errors that another service (or the gateway, for an HTTP
 * client) acts on. Keys are the wire's; a reader gets a detail only when all its fields are there.
 */
import { defineDetail } from "./define.js";

/** A message or payload over a size limit: no retry of the same request passes. */
export const SizeLimit = defineDetail("size limit", { limit_bytes: "number" });
/** The size that was refused, beside its SizeLimit. */
export const MeasuredSize = defineDetail("measured size", { size_bytes: "number" });
/** Who holds a session's lease (AcquireLease refused). */
export const LeaseHolder = defineDetail("lease holder", { holder: "string", epoch: "number" });
/** The lease epoch now current (a write under an older one refused). */
export const CurrentEpoch = defineDetail("current epoch", { current_epoch: "number" });
/** The session's last seq (an append with another expected_seq refused). */
export const CurrentSeq = defineDetail("current seq", { current_seq: "number" });
/** The state a session is in, when that is why a request was refused ("terminated"). */
export const SessionState = defineDetail("session status", { status: "string" });
/** The session a refused request was about, when it is not the one the request named. */
export const SessionRef = defineDetail("session", { session_id: "string" });
/** The request fields at fault, comma-separated, when there are several. */
export const FieldList = defineDetail("fields", { fields: "string" });
/** The broker that holds a sandbox, when another broker was asked. */
export const BrokerRef = defineDetail("broker", { broker_id: "string" });
/** The package layer a refusal is about. */
export const LayerRef = defineDetail("layer", { layer_id: "string" });
/** The event-bus topic a refusal is about. */
export const TopicRef = defineDetail("topic", { topic: "string" });
/** Kafka's error names behind a failure, comma-separated. */
export const KafkaErrorNames = defineDetail("kafka errors", { kafka_error: "string" });
/** The address that could not be reached. */
export const Address = defineDetail("address", { url: "string" });
/** What a machine lacks for the stack to start (`mh`'s setup refusals): "bubblewrap", "port". */
export const SetupNeed = defineDetail("setup", { setup: "string" });
/** How a model request failed, as a session.error type ("model_overloaded_error"...). */
export const ModelErrorKind = defineDetail("model error type", { error_type: "string" });
/** The HTTP status a remote API answered with. */
export const HttpStatus = defineDetail("HTTP status", { status: "number" });
/** The remote API's id of the failed request. */
export const RequestId = defineDetail("request id", { request_id: "string" });
/** How many attempts were made before giving up. */
export const Attempts = defineDetail("attempts", { attempts: "number" });
/** The hand kinds connected to a broker, comma-separated (a kind none of which is connected refused). */
export const HandKinds = defineDetail("hand kinds", { hand_kinds: "string" });
