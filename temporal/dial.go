package temporal

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"os"

	"github.com/agentrt/agentrt/config"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
)

// DefaultAddress is the frontend a configuration without an address
// reaches: the dev server's (temporal server start-dev).
const DefaultAddress = "127.0.0.1:7233"

// Dial connects to the cluster t names, logging through l (nil: nothing).
func Dial(ctx context.Context, t config.Temporal, l *slog.Logger) (client.Client, error) {
	if l == nil {
		l = slog.New(slog.DiscardHandler)
	}
	o := client.Options{HostPort: t.Address, Namespace: t.Namespace, Logger: log.NewStructuredLogger(l)}
	if o.HostPort == "" {
		o.HostPort = DefaultAddress
	}
	if t.TLS != nil {
		cfg, err := tlsConfig(*t.TLS)
		if err != nil {
			return nil, err
		}
		o.ConnectionOptions.TLS = cfg
	}
	c, err := client.DialContext(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("temporal: connect to %s (namespace %s): %w", o.HostPort, orDefault(o.Namespace, "default"), err)
	}
	return c, nil
}

func tlsConfig(t config.TemporalTLS) (*tls.Config, error) {
	cfg := &tls.Config{ServerName: t.ServerName, MinVersion: tls.VersionTLS12}
	if t.Cert != "" {
		cert, err := tls.LoadX509KeyPair(t.Cert, t.Key)
		if err != nil {
			return nil, fmt.Errorf("temporal: tls: the client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	if t.CA != "" {
		pem, err := os.ReadFile(t.CA)
		if err != nil {
			return nil, fmt.Errorf("temporal: tls: the CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("temporal: tls: %s holds no PEM certificate", t.CA)
		}
		cfg.RootCAs = pool
	}
	return cfg, nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
