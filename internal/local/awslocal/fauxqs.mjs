// Started by awslocal.StartFauxqs as `node --input-type=module -e <this>`
// with the working directory holding node_modules/fauxqs.
//
// buildApp + listen rather than startFauxqs: startFauxqs always listens on
// 0.0.0.0, which would expose the emulator (and every queued event) to the
// network. Here it is loopback only.
import { buildApp } from "fauxqs";

const app = buildApp({ logger: false, host: "localhost" });

// fauxqs ignores MessageSystemAttributes, so the X-Ray trace header a
// producer sends (AWSTraceHeader) would never reach the consumer; and it
// drops the MessageGroupId of a standard-queue send, which SQS keeps (a
// standard queue with message groups is a fair queue) and returns on
// receive. Remember both per message id and hand them back on receive, as
// SQS does (fauxqs returns a FIFO queue's groups itself). Bounded, so a
// long `make dev` does not grow without limit (oldest first).
const remembered = new Map();
const maxRemembered = 100000;
const remember = (messageId, header, group) => {
  if (!messageId || (!header && !group)) return;
  remembered.set(messageId, { header, group });
  if (remembered.size > maxRemembered) {
    remembered.delete(remembered.keys().next().value);
  }
};
const traceOf = (attrs) => attrs?.AWSTraceHeader?.StringValue;
const action = (request) => String(request.headers["x-amz-target"] ?? "").replace("AmazonSQS.", "");
const wants = (names, name) => names.includes("All") || names.includes(name);

app.addHook("onSend", async (request, reply, payload) => {
  if (reply.statusCode !== 200 || typeof payload !== "string") return payload;
  const body = request.body ?? {};
  switch (action(request)) {
    case "SendMessage": {
      remember(JSON.parse(payload).MessageId, traceOf(body.MessageSystemAttributes), body.MessageGroupId);
      return payload;
    }
    case "SendMessageBatch": {
      const sent = JSON.parse(payload).Successful ?? [];
      for (const entry of body.Entries ?? []) {
        const ok = sent.find((s) => s.Id === entry.Id);
        remember(ok?.MessageId, traceOf(entry.MessageSystemAttributes), entry.MessageGroupId);
      }
      return payload;
    }
    case "ReceiveMessage": {
      const names = [...(body.AttributeNames ?? []), ...(body.MessageSystemAttributeNames ?? [])];
      const header = wants(names, "AWSTraceHeader"), group = wants(names, "MessageGroupId");
      if (!header && !group) return payload;
      const out = JSON.parse(payload);
      let changed = false;
      for (const m of out.Messages ?? []) {
        const r = remembered.get(m.MessageId);
        if (!r) continue;
        const add = {};
        if (header && r.header) add.AWSTraceHeader = r.header;
        if (group && r.group && !m.Attributes?.MessageGroupId) add.MessageGroupId = r.group;
        if (Object.keys(add).length > 0) {
          m.Attributes = { ...(m.Attributes ?? {}), ...add };
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
