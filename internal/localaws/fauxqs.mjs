// Started by localaws.StartFauxqs as `node --input-type=module -e <this>`
// with the working directory holding node_modules/fauxqs.
//
// buildApp + listen rather than startFauxqs: startFauxqs always listens on
// 0.0.0.0, which would expose the emulator (and every queued event) to the
// network. Here it is loopback only.
import { buildApp } from "fauxqs";

const app = buildApp({ logger: false, host: "localhost" });
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
