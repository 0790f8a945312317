// Started by awslocal.StartFauxqs as `node --input-type=module -e <this>`
// with the working directory holding node_modules/fauxqs.
//
// buildApp + listen rather than startFauxqs: startFauxqs always listens on
// 0.0.0.0, which would expose the emulator (and every queued event) to the
// network. Here it is loopback only.
import { realpathSync } from "node:fs";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { buildApp } from "fauxqs";

// fauxqs hands out at most one message per FIFO message group per receive;
// SQS returns several consecutive messages of a group (up to the ten asked
// for), and Lambda's FIFO batches hold them — which is what a consumer's
// "stop the group after its first failure" logic is for. Receive like SQS:
// after each of fauxqs's one-per-group passes, the groups that pass took
// from are unlocked for the next pass only, until the receive is full or
// nothing more is available; then every lock is restored. fauxqs's own
// order, visibility, redrive and lock counting are untouched. (The module
// is imported by its real path: the same instance fauxqs's app uses.)
const storeURL = pathToFileURL(realpathSync(resolve("node_modules/fauxqs/dist/sqs/sqsStore.js"))).href;
const { SqsQueue } = await import(storeURL);
const onePerGroup = SqsQueue.prototype.dequeueFifo;
SqsQueue.prototype.dequeueFifo = function (maxCount, visibilityTimeoutOverride, dlqResolver) {
  const want = Math.min(maxCount, 10);
  const out = [];
  const hidden = new Map();
  try {
    while (out.length < want) {
      // Expired visibilities first (the pass would do it too): a group
      // they unlock must not count as locked before the pass.
      this.processTimers();
      const lockedBefore = new Set(this.fifoLockedGroups.keys());
      const got = onePerGroup.call(this, want - out.length, visibilityTimeoutOverride, dlqResolver);
      if (got.length === 0) break;
      out.push(...got);
      for (const [group, count] of this.fifoLockedGroups) {
        if (!lockedBefore.has(group)) {
          hidden.set(group, (hidden.get(group) ?? 0) + count);
          this.fifoLockedGroups.delete(group);
        }
      }
    }
  } finally {
    for (const [group, count] of hidden) {
      this.fifoLockedGroups.set(group, (this.fifoLockedGroups.get(group) ?? 0) + count);
    }
  }
  return out;
};

// fauxqs puts a FIFO message whose visibility ended (or was changed to 0)
// back at the front of its group, so two in-flight messages of a group came
// back reversed. SQS keeps a group in order: stamp each message with its
// arrival in the queue it is in (a redrive stamps it anew in the DLQ) and
// keep every group sorted by it after anything that returns messages.
let arrivals = 0;
const enqueue = SqsQueue.prototype.enqueue;
SqsQueue.prototype.enqueue = function (msg) {
  if (this.isFifo()) msg.arrival = ++arrivals;
  return enqueue.call(this, msg);
};
const inOrder = (queue) => {
  if (!queue.isFifo()) return;
  for (const group of queue.fifoMessages.values()) {
    group.sort((a, b) => (a.arrival ?? 0) - (b.arrival ?? 0));
  }
};
for (const name of ["changeVisibility", "processTimers"]) {
  const original = SqsQueue.prototype[name];
  SqsQueue.prototype[name] = function (...args) {
    const out = original.apply(this, args);
    inOrder(this);
    return out;
  };
}

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
