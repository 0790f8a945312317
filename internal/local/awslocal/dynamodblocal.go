package awslocal

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// DynamoDB emulators the local stack and tests can run on.
const (
	// DynamoEmbedded is the in-process emulator (minidyn behind
	// DynamoHandler): no prerequisite, starts at once; its transactions
	// slow down linearly with table size and it ignores top-level REMOVE.
	DynamoEmbedded = "embedded"
	// DynamoLocal is AWS's DynamoDB Local (a Java process, in memory):
	// DynamoDB's own semantics and a flat write rate as tables grow.
	DynamoLocal = "local"
	// DynamoAuto is DynamoLocal when Java and the jar are there, else
	// DynamoEmbedded with a warning.
	DynamoAuto = "auto"
)

// EnvDynamoDB chooses the emulator ("embedded", "local", "auto").
const EnvDynamoDB = "EVP_DYNAMODB"

// EnvDynamoDBLocalDir points at the directory holding DynamoDBLocal.jar
// (default: .cache/dynamodb-local at or above the working directory, where
// `make deps` puts it).
const EnvDynamoDBLocalDir = "DYNAMODB_LOCAL_DIR"

// ErrNoDynamoDBLocal: DynamoDB Local cannot run here; the error says what
// to install.
var ErrNoDynamoDBLocal = errors.New("awslocal: DynamoDB Local is not available")

// FindDynamoDBLocal returns the directory of DynamoDBLocal.jar and the java
// binary to run it with.
func FindDynamoDBLocal() (dir, java string, err error) {
	java, err = exec.LookPath("java")
	if err != nil {
		return "", "", fmt.Errorf("%w: no java on PATH (install Java 17, e.g. `apt-get install openjdk-17-jre-headless`, then `make deps`)", ErrNoDynamoDBLocal)
	}
	has := func(d string) bool {
		_, err := os.Stat(filepath.Join(d, "DynamoDBLocal.jar"))
		return err == nil
	}
	if d := os.Getenv(EnvDynamoDBLocalDir); d != "" {
		if has(d) {
			return d, java, nil
		}
		return "", "", fmt.Errorf("%w: %s=%s has no DynamoDBLocal.jar (run `make deps`)", ErrNoDynamoDBLocal, EnvDynamoDBLocalDir, d)
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if c := filepath.Join(d, ".cache", "dynamodb-local"); has(c) {
			return c, java, nil
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	return "", "", fmt.Errorf("%w: no .cache/dynamodb-local/DynamoDBLocal.jar at or above %s (run `make deps`, which fetches it)", ErrNoDynamoDBLocal, wd)
}

// DynamoDBLocalProcess is a running DynamoDB Local.
type DynamoDBLocalProcess struct {
	URL    string
	cmd    *exec.Cmd
	stderr *tailBuffer
	done   chan struct{}
}

// StartDynamoDBLocal runs DynamoDB Local in memory on addr ("" = a free
// loopback port) and waits until it answers.
func StartDynamoDBLocal(ctx context.Context, addr string) (*DynamoDBLocalProcess, error) {
	dir, java, err := FindDynamoDBLocal()
	if err != nil {
		return nil, err
	}
	port := 0
	if addr != "" {
		_, p, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("awslocal: DynamoDB address %q: %w", addr, err)
		}
		port, _ = strconv.Atoi(p)
	}
	if port == 0 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		port = l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
	}
	p := &DynamoDBLocalProcess{URL: "http://127.0.0.1:" + strconv.Itoa(port), stderr: &tailBuffer{max: 8 << 10}, done: make(chan struct{})}
	// -sharedDb: one database whatever the credentials and region; tables
	// are kept apart by each test's prefix, as in the embedded emulator.
	p.cmd = exec.Command(java, "-Xmx512m", "-Djava.library.path="+filepath.Join(dir, "DynamoDBLocal_lib"),
		"-jar", filepath.Join(dir, "DynamoDBLocal.jar"), "-inMemory", "-sharedDb", "-disableTelemetry", "-port", strconv.Itoa(port))
	p.cmd.Dir = dir
	p.cmd.Stdout, p.cmd.Stderr = p.stderr, p.stderr
	setProcessGroup(p.cmd)
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("awslocal: start DynamoDB Local: %w", err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()

	client := NewDynamoDBClient(NewConfig(), p.URL)
	deadline := time.Now().Add(60 * time.Second)
	for {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := client.ListTables(cctx, &dynamodb.ListTablesInput{})
		cancel()
		if err == nil {
			return p, nil
		}
		select {
		case <-p.done:
			return nil, fmt.Errorf("awslocal: DynamoDB Local exited at start: %s", p.stderr.String())
		case <-ctx.Done():
			_ = p.Close()
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = p.Close()
			return nil, fmt.Errorf("awslocal: DynamoDB Local did not answer within 60 s: %v; %s", err, p.stderr.String())
		}
	}
}

// Close stops the process.
func (p *DynamoDBLocalProcess) Close() error {
	killProcessGroup(p.cmd)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
	}
	return nil
}

// PID is the Java process's pid.
func (p *DynamoDBLocalProcess) PID() int { return p.cmd.Process.Pid }
