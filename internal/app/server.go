package app

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"go.yaml.in/yaml/v3"

	"github.com/agentrt/agentrt/config"
	"github.com/agentrt/agentrt/server"
)

// ServerKeys returns the API keys of the config's server block: those
// written in it and those of its api_keys_file, which gives each key by
// its hash only.
func ServerKeys(cfg *config.Config) ([]server.Key, error) {
	var keys []server.Key
	for _, k := range cfg.Server.APIKeys {
		keys = append(keys, server.Key{Key: k.Key, Hash: k.Hash, Tenant: k.Tenant, Principal: k.Principal, Rate: k.Rate, Burst: k.Burst,
			MaxStreams: k.MaxStreams})
	}
	if cfg.Server.APIKeysFile == "" {
		return keys, nil
	}
	fk, err := ReadKeysFile(cfg.Server.APIKeysFile)
	if err != nil {
		return nil, err
	}
	for _, k := range fk {
		keys = append(keys, server.Key{Hash: k.Hash, Tenant: k.Tenant, Principal: k.Principal, Rate: k.Rate, Burst: k.Burst,
			MaxStreams: k.MaxStreams})
	}
	return keys, nil
}

// FileKey is an entry of an API keys file: a key by its hash.
type FileKey struct {
	Hash      string  `yaml:"hash"`
	Tenant    string  `yaml:"tenant"`
	Principal string  `yaml:"principal,omitempty"`
	Rate      float64 `yaml:"rate,omitempty"`
	Burst     int     `yaml:"burst,omitempty"`
	// MaxStreams is how many streams the key may hold open at once (zero:
	// server.max_streams).
	MaxStreams int `yaml:"max_streams,omitempty"`
}

// ReadKeysFile reads an API keys file: a YAML list of FileKey. A missing
// file is an empty list; an entry that gives a key itself rather than its
// hash is an error (the file is for keys that are never written down).
func ReadKeysFile(path string) ([]FileKey, error) {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("api keys file: %w", err)
	}
	var keys []FileKey
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&keys); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("api keys file %s: %v (want a list of {hash, tenant, principal, rate, burst}; a key itself does not belong in it)", path, err)
	}
	for i, k := range keys {
		if k.Hash == "" || k.Tenant == "" {
			return nil, fmt.Errorf("api keys file %s: entry %d needs a hash and a tenant", path, i)
		}
	}
	return keys, nil
}

// AppendKeysFile adds k to the API keys file at path, creating it (mode
// 0600) if need be.
func AppendKeysFile(path string, k FileKey) error {
	keys, err := ReadKeysFile(path)
	if err != nil {
		return err
	}
	keys = append(keys, k)
	b, err := yaml.Marshal(keys)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("api keys file: %w", err)
	}
	return os.Rename(tmp, path)
}
