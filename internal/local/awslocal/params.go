package awslocal

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
)

// ParamsHandler emulates the two configuration services the functions read
// at cold start, over their JSON protocol (X-Amz-Target), so the real SDK
// clients run locally: SSM Parameter Store (PutParameter, GetParameter,
// GetParametersByPath, DeleteParameter: stage settings too large for an
// environment variable) and Secrets Manager (CreateSecret, PutSecretValue,
// GetSecretValue: signing secrets and API keys). No third-party emulator of
// either runs here without Docker; the subset is what the platform calls,
// with the services' limits and error codes where the platform depends on
// them (4 KB standard parameters, ParameterNotFound, ResourceNotFoundException,
// path pages of at most 10). Safe for concurrent use.
type ParamsHandler struct {
	mu      sync.Mutex
	params  map[string]param
	secrets map[string]*storedSecret // by name
}

type param struct {
	Name, Type, Value string
	Version           int64
	Modified          time.Time
}

type storedSecret struct {
	Name, ARN string
	Value     string
	Version   int
	Created   time.Time
}

// MaxStandardParameterBytes is SSM's limit on a standard-tier parameter value.
const MaxStandardParameterBytes = 4096

// NewParamsHandler returns an empty store.
func NewParamsHandler() *ParamsHandler {
	return &ParamsHandler{params: map[string]param{}, secrets: map[string]*storedSecret{}}
}

type apiError struct {
	status int
	code   string
	msg    string
}

func (h *ParamsHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	target := r.Header.Get("X-Amz-Target")
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if r.Method != http.MethodPost || err != nil {
		writeAPIError(w, &apiError{http.StatusBadRequest, "InvalidRequest", "POST a JSON request with X-Amz-Target"})
		return
	}
	var out any
	var aerr *apiError
	switch target {
	case "AmazonSSM.PutParameter":
		out, aerr = h.putParameter(body)
	case "AmazonSSM.GetParameter":
		out, aerr = h.getParameter(body)
	case "AmazonSSM.GetParametersByPath":
		out, aerr = h.getParametersByPath(body)
	case "AmazonSSM.DeleteParameter":
		out, aerr = h.deleteParameter(body)
	case "secretsmanager.CreateSecret":
		out, aerr = h.createSecret(body)
	case "secretsmanager.PutSecretValue":
		out, aerr = h.putSecretValue(body)
	case "secretsmanager.GetSecretValue":
		out, aerr = h.getSecretValue(body)
	default:
		aerr = &apiError{http.StatusBadRequest, "UnknownOperationException", fmt.Sprintf("awslocal: %q is not emulated", target)}
	}
	if aerr != nil {
		writeAPIError(w, aerr)
		return
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	_ = json.NewEncoder(w).Encode(out)
}

func writeAPIError(w http.ResponseWriter, e *apiError) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.Header().Set("X-Amzn-ErrorType", e.code)
	w.WriteHeader(e.status)
	_ = json.NewEncoder(w).Encode(map[string]string{"__type": e.code, "message": e.msg})
}

func decode(body []byte, v any) *apiError {
	if err := json.Unmarshal(body, v); err != nil {
		return &apiError{http.StatusBadRequest, "ValidationException", err.Error()}
	}
	return nil
}

func validation(format string, args ...any) *apiError {
	return &apiError{http.StatusBadRequest, "ValidationException", fmt.Sprintf(format, args...)}
}

func paramARN(name string) string {
	return "arn:aws:ssm:" + Region + ":" + AccountID + ":parameter" + name
}

func (p param) wire() map[string]any {
	return map[string]any{"Name": p.Name, "Type": p.Type, "Value": p.Value, "Version": p.Version,
		"ARN": paramARN(p.Name), "DataType": "text", "LastModifiedDate": float64(p.Modified.UnixMilli()) / 1000}
}

func (h *ParamsHandler) putParameter(body []byte) (any, *apiError) {
	var in struct {
		Name, Value, Type, Tier string
		Overwrite               bool
	}
	if e := decode(body, &in); e != nil {
		return nil, e
	}
	if !strings.HasPrefix(in.Name, "/") || len(in.Name) > 1011 {
		return nil, validation("parameter name %q: a path starting with / of at most 1011 characters", in.Name)
	}
	if in.Value == "" {
		return nil, validation("parameter %s: empty value", in.Name)
	}
	if in.Tier != "Advanced" && len(in.Value) > MaxStandardParameterBytes {
		return nil, validation("parameter %s: %d bytes; a standard parameter holds %d", in.Name, len(in.Value), MaxStandardParameterBytes)
	}
	if in.Type == "" {
		in.Type = "String"
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	old, exists := h.params[in.Name]
	if exists && !in.Overwrite {
		return nil, &apiError{http.StatusBadRequest, "ParameterAlreadyExists", "parameter " + in.Name + " exists"}
	}
	p := param{Name: in.Name, Type: in.Type, Value: in.Value, Version: old.Version + 1, Modified: time.Now()}
	h.params[in.Name] = p
	return map[string]any{"Version": p.Version, "Tier": "Standard"}, nil
}

func (h *ParamsHandler) getParameter(body []byte) (any, *apiError) {
	var in struct{ Name string }
	if e := decode(body, &in); e != nil {
		return nil, e
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	p, ok := h.params[in.Name]
	if !ok {
		return nil, &apiError{http.StatusBadRequest, "ParameterNotFound", "parameter " + in.Name + " not found"}
	}
	return map[string]any{"Parameter": p.wire()}, nil
}

func (h *ParamsHandler) deleteParameter(body []byte) (any, *apiError) {
	var in struct{ Name string }
	if e := decode(body, &in); e != nil {
		return nil, e
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.params[in.Name]; !ok {
		return nil, &apiError{http.StatusBadRequest, "ParameterNotFound", "parameter " + in.Name + " not found"}
	}
	delete(h.params, in.Name)
	return map[string]any{}, nil
}

func (h *ParamsHandler) getParametersByPath(body []byte) (any, *apiError) {
	var in struct {
		Path       string
		Recursive  bool
		MaxResults int
		NextToken  string
	}
	if e := decode(body, &in); e != nil {
		return nil, e
	}
	if !strings.HasPrefix(in.Path, "/") {
		return nil, validation("path %q must start with /", in.Path)
	}
	if in.MaxResults == 0 {
		in.MaxResults = 10
	}
	if in.MaxResults < 1 || in.MaxResults > 10 {
		return nil, validation("MaxResults %d: 1..10", in.MaxResults)
	}
	prefix := strings.TrimSuffix(in.Path, "/") + "/"
	h.mu.Lock()
	var names []string
	for name := range h.params {
		rest, ok := strings.CutPrefix(name, prefix)
		if ok && (in.Recursive || !strings.Contains(rest, "/")) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	start := 0
	if in.NextToken != "" {
		n, err := strconv.Atoi(in.NextToken)
		if err != nil || n < 0 || n > len(names) {
			h.mu.Unlock()
			return nil, validation("invalid NextToken")
		}
		start = n
	}
	end := min(start+in.MaxResults, len(names))
	params := []map[string]any{}
	for _, name := range names[start:end] {
		params = append(params, h.params[name].wire())
	}
	h.mu.Unlock()
	out := map[string]any{"Parameters": params}
	if end < len(names) {
		out["NextToken"] = strconv.Itoa(end)
	}
	return out, nil
}

func secretARN(name string) string {
	// Secrets Manager appends six random characters; a fixed suffix keeps
	// ARNs stable for tests.
	return "arn:aws:secretsmanager:" + Region + ":" + AccountID + ":secret:" + name + "-AbCdEf"
}

// lookup finds a secret by name or ARN (the caller holds mu).
func (h *ParamsHandler) lookup(id string) *storedSecret {
	if s, ok := h.secrets[id]; ok {
		return s
	}
	for _, s := range h.secrets {
		if s.ARN == id {
			return s
		}
	}
	return nil
}

func (s *storedSecret) versionID() string { return fmt.Sprintf("v%08d-local", s.Version) }

func (h *ParamsHandler) createSecret(body []byte) (any, *apiError) {
	var in struct{ Name, SecretString string }
	if e := decode(body, &in); e != nil {
		return nil, e
	}
	if in.Name == "" || len(in.Name) > 512 {
		return nil, validation("secret name %q: 1..512 characters", in.Name)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.secrets[in.Name] != nil {
		return nil, &apiError{http.StatusBadRequest, "ResourceExistsException", "secret " + in.Name + " exists"}
	}
	s := &storedSecret{Name: in.Name, ARN: secretARN(in.Name), Value: in.SecretString, Version: 1, Created: time.Now()}
	h.secrets[in.Name] = s
	return map[string]any{"ARN": s.ARN, "Name": s.Name, "VersionId": s.versionID()}, nil
}

func (h *ParamsHandler) putSecretValue(body []byte) (any, *apiError) {
	var in struct{ SecretId, SecretString string }
	if e := decode(body, &in); e != nil {
		return nil, e
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.lookup(in.SecretId)
	if s == nil {
		return nil, &apiError{http.StatusBadRequest, "ResourceNotFoundException", "Secrets Manager can't find the specified secret."}
	}
	s.Value, s.Version = in.SecretString, s.Version+1
	return map[string]any{"ARN": s.ARN, "Name": s.Name, "VersionId": s.versionID(), "VersionStages": []string{"AWSCURRENT"}}, nil
}

func (h *ParamsHandler) getSecretValue(body []byte) (any, *apiError) {
	var in struct{ SecretId, VersionStage string }
	if e := decode(body, &in); e != nil {
		return nil, e
	}
	if in.VersionStage != "" && in.VersionStage != "AWSCURRENT" {
		return nil, validation("only AWSCURRENT is emulated")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.lookup(in.SecretId)
	if s == nil {
		return nil, &apiError{http.StatusBadRequest, "ResourceNotFoundException", "Secrets Manager can't find the specified secret."}
	}
	return map[string]any{"ARN": s.ARN, "Name": s.Name, "SecretString": s.Value, "VersionId": s.versionID(),
		"VersionStages": []string{"AWSCURRENT"}, "CreatedDate": float64(s.Created.UnixMilli()) / 1000}, nil
}

// NewSSMClient returns an SSM client for endpoint (a ParamsHandler).
func NewSSMClient(cfg aws.Config, endpoint string, optFns ...func(*ssm.Options)) *ssm.Client {
	return ssm.NewFromConfig(cfg, append([]func(*ssm.Options){func(o *ssm.Options) {
		o.BaseEndpoint = aws.String(endpoint)
	}}, optFns...)...)
}

// NewSecretsManagerClient returns a Secrets Manager client for endpoint (a
// ParamsHandler).
func NewSecretsManagerClient(cfg aws.Config, endpoint string, optFns ...func(*secretsmanager.Options)) *secretsmanager.Client {
	return secretsmanager.NewFromConfig(cfg, append([]func(*secretsmanager.Options){func(o *secretsmanager.Options) {
		o.BaseEndpoint = aws.String(endpoint)
	}}, optFns...)...)
}
