package awslocal

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// Options configures Start. The zero value starts everything on random
// loopback ports, which is what tests want; `make dev` pins addresses.
type Options struct {
	// DynamoDBAddr and S3Addr are listen addresses such as
	// "127.0.0.1:8000"; "" picks a random loopback port.
	DynamoDBAddr string
	S3Addr       string
	// Fauxqs configures the SQS/SNS child process (Fauxqs.Port pins its
	// port).
	Fauxqs FauxqsOptions
	// DynamoDB is the DynamoDB emulator: DynamoEmbedded, DynamoLocal or
	// DynamoAuto; "" reads EVP_DYNAMODB, else embedded.
	DynamoDB string
	// Warn receives a fallback notice (DynamoAuto without Java).
	Warn func(msg string)
}

// Emulators is a running set of DynamoDB, SQS/SNS, S3 and SSM/Secrets
// Manager emulators. The
// Lambda invoke server is not part of it: the local stack mounts a
// Functions handler on its own address, and tests serve one with
// Env.ServeFunctions.
type Emulators struct {
	DynamoDBEndpoint string
	SQSEndpoint      string
	// SNSEndpoint is fauxqs again: it serves SNS on the SQS port.
	SNSEndpoint string
	S3Endpoint  string
	// ParamsEndpoint serves SSM Parameter Store and Secrets Manager
	// (ParamsHandler); Params is its store.
	ParamsEndpoint string
	Params         *ParamsHandler
	// DynamoKind is the DynamoDB emulator running (DynamoEmbedded or
	// DynamoLocal).
	DynamoKind string
	// Dynamo is the embedded DynamoDB handler, for inspecting
	// emulator-only state such as TTL settings (nil on DynamoDB Local).
	Dynamo *DynamoHandler
	// S3Notifications delivers the S3 emulator's event notifications.
	S3Notifications *S3Notifications

	dynamoSrv   *httptest.Server
	dynamoLocal *DynamoDBLocalProcess
	s3Srv       *httptest.Server
	paramsSrv   *httptest.Server
	fauxqs      *Fauxqs

	closeOnce sync.Once
	closeErr  error
}

// Start starts every emulator (DynamoDB, SQS/SNS, S3, SSM and Secrets
// Manager). On error nothing is left running.
func Start(ctx context.Context, opts Options) (*Emulators, error) {
	e := &Emulators{}
	kind := opts.DynamoDB
	if kind == "" {
		kind = os.Getenv(EnvDynamoDB)
	}
	var err error
	switch kind {
	case DynamoLocal, DynamoAuto:
		e.dynamoLocal, err = StartDynamoDBLocal(ctx, opts.DynamoDBAddr)
		if err == nil {
			e.DynamoKind, e.DynamoDBEndpoint = DynamoLocal, e.dynamoLocal.URL
			break
		}
		if kind == DynamoLocal || !errors.Is(err, ErrNoDynamoDBLocal) {
			return nil, err
		}
		if opts.Warn != nil {
			opts.Warn(err.Error() + "; using the embedded DynamoDB emulator, whose writes slow down as tables grow")
		}
		fallthrough
	case "", DynamoEmbedded:
		e.Dynamo = NewDynamoHandler()
		if e.dynamoSrv, err = serve(e.Dynamo, opts.DynamoDBAddr); err != nil {
			return nil, err
		}
		e.DynamoKind, e.DynamoDBEndpoint = DynamoEmbedded, e.dynamoSrv.URL
	default:
		return nil, fmt.Errorf("awslocal: %s=%q: want %s, %s or %s", EnvDynamoDB, kind, DynamoEmbedded, DynamoLocal, DynamoAuto)
	}
	e.S3Notifications = NewS3Notifications(NewS3Handler())
	if e.s3Srv, err = serve(e.S3Notifications, opts.S3Addr); err != nil {
		_ = e.Close()
		return nil, err
	}
	e.Params = NewParamsHandler()
	if e.paramsSrv, err = serve(e.Params, ""); err != nil {
		_ = e.Close()
		return nil, err
	}
	e.ParamsEndpoint = e.paramsSrv.URL
	if e.fauxqs, err = StartFauxqs(ctx, opts.Fauxqs); err != nil {
		_ = e.Close()
		return nil, err
	}
	e.S3Endpoint = e.s3Srv.URL
	e.SQSEndpoint = e.fauxqs.URL
	e.S3Notifications.SendThrough(e.SQS())
	e.SNSEndpoint = e.fauxqs.URL
	return e, nil
}

// Close stops every emulator; it is idempotent.
func (e *Emulators) Close() error {
	e.closeOnce.Do(func() {
		var errs []error
		if e.fauxqs != nil {
			errs = append(errs, e.fauxqs.Close())
		}
		if e.dynamoSrv != nil {
			e.dynamoSrv.Close()
		}
		if e.dynamoLocal != nil {
			errs = append(errs, e.dynamoLocal.Close())
		}
		if e.s3Srv != nil {
			e.s3Srv.Close()
		}
		if e.paramsSrv != nil {
			e.paramsSrv.Close()
		}
		e.closeErr = errors.Join(errs...)
	})
	return e.closeErr
}

// FauxqsPID is the pid of the fauxqs node process.
func (e *Emulators) FauxqsPID() int { return e.fauxqs.PID() }

// Config is the aws.Config of local clients (static "test" credentials,
// us-east-1). Endpoints are set per client, not here.
func (e *Emulators) Config() aws.Config { return NewConfig() }

// DynamoDB returns a client for the DynamoDB emulator.
func (e *Emulators) DynamoDB(optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	return NewDynamoDBClient(e.Config(), e.DynamoDBEndpoint, optFns...)
}

// SQS returns a client for fauxqs.
func (e *Emulators) SQS(optFns ...func(*sqs.Options)) *sqs.Client {
	return NewSQSClient(e.Config(), e.SQSEndpoint, optFns...)
}

// SNS returns an SNS client for fauxqs.
func (e *Emulators) SNS(optFns ...func(*sns.Options)) *sns.Client {
	return NewSNSClient(e.Config(), e.SNSEndpoint, optFns...)
}

// S3 returns a path-style client for the S3 emulator.
func (e *Emulators) S3(optFns ...func(*s3.Options)) *s3.Client {
	return NewS3Client(e.Config(), e.S3Endpoint, optFns...)
}

// Clients returns one client of each.
func (e *Emulators) Clients() Clients {
	return e.ClientsFor(e.Config())
}

// ClientsFor returns one client of each built from cfg (its APIOptions
// included).
func (e *Emulators) ClientsFor(cfg aws.Config) Clients {
	return Clients{
		DynamoDB: NewDynamoDBClient(cfg, e.DynamoDBEndpoint),
		SQS:      NewSQSClient(cfg, e.SQSEndpoint),
		S3:       NewS3Client(cfg, e.S3Endpoint),
		SNS:      NewSNSClient(cfg, e.SNSEndpoint),
		SSM:      NewSSMClient(cfg, e.ParamsEndpoint),
		Secrets:  NewSecretsManagerClient(cfg, e.ParamsEndpoint),
	}
}
