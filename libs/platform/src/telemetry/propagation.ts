import { Metadata } from '@grpc/grpc-js';
import { context, propagation, type Context, type TextMapGetter, type TextMapSetter } from '@opentelemetry/api';
import type { MsgHdrs } from '@nats-io/transport-node';

const natsSetter: TextMapSetter<MsgHdrs> = { set: (h, k, v) => h.set(k, v) };
const natsGetter: TextMapGetter<MsgHdrs | undefined> = {
  keys: (h) => (h ? h.keys() : []),
  get: (h, k) => (h && h.has(k) ? h.get(k) : undefined),
};

/** Writes the active trace context (`traceparent`, `tracestate`) into NATS headers; no-op when no trace is active. */
export function injectNatsHeaders(h: MsgHdrs, ctx: Context = context.active()): MsgHdrs {
  propagation.inject(ctx, h, natsSetter);
  return h;
}

/** The context a NATS message was published in (its headers' trace context over `base`). */
export function extractNatsHeaders(h: MsgHdrs | undefined, base: Context = context.active()): Context {
  return propagation.extract(base, h, natsGetter);
}

const grpcSetter: TextMapSetter<Metadata> = { set: (md, k, v) => md.set(k, v) };
const grpcGetter: TextMapGetter<Metadata> = {
  keys: (md) => Object.keys(md.getMap()),
  get: (md, k) => {
    const v = md.get(k)[0];
    return typeof v === 'string' ? v : undefined;
  },
};

/** gRPC call metadata carrying the active trace context (empty when no trace is active). */
export function traceMetadata(ctx: Context = context.active(), md: Metadata = new Metadata()): Metadata {
  propagation.inject(ctx, md, grpcSetter);
  return md;
}

/** The context of the caller of a gRPC call, from its metadata. */
export function extractGrpcMetadata(md: Metadata | undefined, base: Context = context.active()): Context {
  return md ? propagation.extract(base, md, grpcGetter) : base;
}
