package ssmparam

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
)

// MaxValueBytes is what a standard-tier parameter holds.
const MaxValueBytes = 4096

// Chunk splits m into JSON objects of at most maxBytes each, keys in order,
// so the same map always gives the same parameters. An entry that alone
// exceeds maxBytes is an error.
func Chunk(m map[string]string, maxBytes int) ([]string, error) {
	var chunks []string
	cur := map[string]string{}
	size := 2 // {}
	flush := func() error {
		if len(cur) == 0 {
			return nil
		}
		b, err := json.Marshal(cur)
		if err != nil {
			return err
		}
		chunks = append(chunks, string(b))
		cur, size = map[string]string{}, 2
		return nil
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		kb, _ := json.Marshal(k)
		vb, _ := json.Marshal(m[k])
		entry := len(kb) + 1 + len(vb) // "k":"v"
		if 2+entry > maxBytes {
			return nil, fmt.Errorf("ssmparam: entry %q is %d bytes; a parameter holds %d", k, 2+entry, maxBytes)
		}
		sep := 0
		if len(cur) > 0 {
			sep = 1
		}
		if size+sep+entry > maxBytes {
			if err := flush(); err != nil {
				return nil, err
			}
			sep = 0
		}
		cur[k] = m[k]
		size += sep + entry
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return chunks, nil
}

// Version is a short digest of the map, for an environment variable that
// changes exactly when the map does.
func Version(m map[string]string) string {
	b, _ := json.Marshal(m) // map keys are marshalled sorted
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// LoadMap reads every parameter directly under path and merges their JSON
// objects. A key in two parameters with two values is an error (a hand
// edit gone wrong must not pick one at random).
func LoadMap(ctx context.Context, client *ssm.Client, path string) (map[string]string, error) {
	out := map[string]string{}
	p := ssm.NewGetParametersByPathPaginator(client, &ssm.GetParametersByPathInput{Path: aws.String(path), WithDecryption: aws.Bool(true)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("ssmparam: read %s: %w", path, err)
		}
		for _, prm := range page.Parameters {
			var part map[string]string
			if err := json.Unmarshal([]byte(aws.ToString(prm.Value)), &part); err != nil {
				return nil, fmt.Errorf("ssmparam: %s is not a JSON object of strings: %w", aws.ToString(prm.Name), err)
			}
			for k, v := range part {
				if old, dup := out[k]; dup && old != v {
					return nil, fmt.Errorf("ssmparam: %s: key %q is %q in one parameter and %q in another", path, k, old, v)
				}
				out[k] = v
			}
		}
	}
	return out, nil
}

// Extend returns base with the map under path merged in; with path "" it
// returns base and makes no call. A key both have with different values is
// an error.
func Extend(ctx context.Context, client *ssm.Client, base map[string]string, path string) (map[string]string, error) {
	if path == "" {
		return base, nil
	}
	if client == nil {
		return nil, fmt.Errorf("ssmparam: %s: no SSM client", path)
	}
	more, err := LoadMap(ctx, client, path)
	if err != nil {
		return nil, err
	}
	out := maps.Clone(base)
	if out == nil {
		out = map[string]string{}
	}
	for k, v := range more {
		if old, dup := out[k]; dup && old != v {
			return nil, fmt.Errorf("ssmparam: key %q is %q in the environment and %q under %s", k, old, v, path)
		}
		out[k] = v
	}
	return out, nil
}

// The maps a stage keeps in SSM, by name: the CDK app writes them under
// Path(stage parameter prefix, name), the local stack under its own prefix.
const (
	StripeAccountTenants = "stripe-account-tenants"
	PurgeZones           = "purge-zones"
)

// Path is where a map lives under a stage's parameter prefix
// ("/evp/prod" → "/evp/prod/config/purge-zones").
func Path(prefix, name string) string { return prefix + "/config/" + name }

// Store writes m under path as the chunks Chunk makes, replacing what is
// there (the local stack's counterpart of the CDK app's parameters).
func Store(ctx context.Context, client *ssm.Client, path string, m map[string]string) error {
	chunks, err := Chunk(m, MaxValueBytes)
	if err != nil {
		return err
	}
	for i, c := range chunks {
		if _, err := client.PutParameter(ctx, &ssm.PutParameterInput{
			Name: aws.String(fmt.Sprintf("%s/%03d", path, i)), Value: aws.String(c), Overwrite: aws.Bool(true),
		}); err != nil {
			return fmt.Errorf("ssmparam: write %s: %w", path, err)
		}
	}
	return nil
}
