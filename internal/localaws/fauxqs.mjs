// Started by localaws.StartFauxqs as `node --input-type=module -e <this>`
// with the working directory holding node_modules/fauxqs.
import { startFauxqs } from "fauxqs";

const server = await startFauxqs({
  port: Number(process.env.FAUXQS_PORT ?? 0),
  logger: false,
  host: "localhost",
});

// The Go parent holds our stdin open; when it closes (Close, or the parent
// dying) stop and exit so no emulator outlives its test binary.
let stopping = false;
const stop = () => {
  if (stopping) return;
  stopping = true;
  server.stop().finally(() => process.exit(0));
  setTimeout(() => process.exit(0), 2000).unref();
};
process.stdin.on("end", stop);
process.stdin.on("close", stop);
process.stdin.on("error", stop);
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
process.stdin.resume();

console.log(JSON.stringify({ port: server.port }));
