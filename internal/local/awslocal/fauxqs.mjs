// Started by awslocal.StartFauxqs as `node --input-type=module -e <this>`
// with the working directory holding node_modules/fauxqs.
//
// buildApp + listen rather than startFauxqs: startFauxqs always listens on
// 0.0.0.0, which would expose the emulator (and every queued event) to the
// network. Here it is loopback only.
import { buildApp } from "fauxqs";

const app = buildApp({ logger: false, host: "localhost" });

// fauxqs ignores MessageSystemAttributes, so the X-Ray trace header a
// producer sends (AWSTraceHeader) would never reach the consumer. Remember
// it per message id and hand it back on receive, as SQS does. Bounded, so
// a long `make dev` does not grow without limit (oldest first).
const traceHeaders = new Map();
const maxTraceHeaders = 100000;
const remember = (messageId, header) => {
  if (!messageId || !header) return;
  traceHeaders.set(messageId, header);
  if (traceHeaders.size > maxTraceHeaders) {
    traceHeaders.delete(traceHeaders.keys().next().value);
  }
};
const traceOf = (attrs) => attrs?.AWSTraceHeader?.StringValue;
const action = (request) => String(request.headers["x-amz-target"] ?? "").replace("AmazonSQS.", "");

app.addHook("onSend", async (request, reply, payload) => {
  if (reply.statusCode !== 200 || typeof payload !== "string") return payload;
  const body = request.body ?? {};
  switch (action(request)) {
    case "SendMessage": {
      remember(JSON.parse(payload).MessageId, traceOf(body.MessageSystemAttributes));
      return payload;
    }
    case "SendMessageBatch": {
      const sent = JSON.parse(payload).Successful ?? [];
      for (const entry of body.Entries ?? []) {
        const ok = sent.find((s) => s.Id === entry.Id);
        remember(ok?.MessageId, traceOf(entry.MessageSystemAttributes));
      }
      return payload;
    }
    case "ReceiveMessage": {
      const names = [...(body.AttributeNames ?? []), ...(body.MessageSystemAttributeNames ?? [])];
      if (!names.includes("All") && !names.includes("AWSTraceHeader")) return payload;
      const out = JSON.parse(payload);
      let changed = false;
      for (const m of out.Messages ?? []) {
        const header = traceHeaders.get(m.MessageId);
        if (header) {
          m.Attributes = { ...(m.Attributes ?? {}), AWSTraceHeader: header };
          changed = true;
        }
      }
      return changed ? JSON.stringify(out) : payload;
    }
  }
  return payload;
});

await app.listen({ port: Number(process.env.FAUXQS_PORT ?? 0), host: "127.0.0.1" });
const { port } = app.server.address();

// The Go parent holds our stdin open; when it closes (Close, or the parent
// dying) stop and exit so no emulator outlives its test binary.
let stopping = false;
const stop = () => {
  if (stopping) return;
  stopping = true;
  app.close().finally(() => process.exit(0));
  setTimeout(() => process.exit(0), 2000).unref();
};
process.stdin.on("end", stop);
process.stdin.on("close", stop);
process.stdin.on("error", stop);
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
process.stdin.resume();

console.log(JSON.stringify({ port }));
