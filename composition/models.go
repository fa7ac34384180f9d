package composition

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/dsh-acp/dsh-acp/acp"
)

// ModelConfig is one model of the user's config (docs/configuration.md):
// what the Model menu offers, and what the model can take.
type ModelConfig struct {
	// ID is the model id requests name.
	ID string `json:"id"`
	// Name and Description are shown in the Model menu (default: the id).
	Name        string `json:"name,omitempty"`
	Description string `json:"description,omitempty"`
	// Images says the model accepts images in prompts (default false).
	Images bool `json:"images,omitempty"`
	// Thinking says the model takes the thinking switch (default true:
	// DeepSeek's API takes it on every model).
	Thinking *bool `json:"thinking,omitempty"`
}

// ModelLister lists the provider's model ids (GET /models).
type ModelLister func(ctx context.Context) ([]string, error)

// HTTPModelLister lists the models of an OpenAI-compatible API at base
// (GET base/models with the key as a bearer token).
func HTTPModelLister(base, key string, client *http.Client) ModelLister {
	if client == nil {
		client = http.DefaultClient
	}
	return func(ctx context.Context) ([]string, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+"/models", nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := client.Do(req)
		if err != nil {
			return nil, fmt.Errorf("list models: %w", err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("list models: HTTP %d", resp.StatusCode)
		}
		var body struct {
			Data []struct {
				ID string `json:"id"`
			} `json:"data"`
		}
		if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&body); err != nil {
			return nil, fmt.Errorf("list models: %w", err)
		}
		ids := make([]string, 0, len(body.Data))
		for _, d := range body.Data {
			if d.ID != "" {
				ids = append(ids, d.ID)
			}
		}
		return ids, nil
	}
}

// modelCatalog is the Model menu's list: the configured models, else the
// provider's, fetched once in the background and cached for the process.
type modelCatalog struct {
	configured []ModelConfig
	done       chan struct{} // closed once fetched holds the provider's list
	fetched    []ModelConfig
}

// newModelCatalog starts fetching the provider's list when none is
// configured and list is set.
func newModelCatalog(configured []ModelConfig, list ModelLister, log func(error)) *modelCatalog {
	c := &modelCatalog{configured: configured, done: make(chan struct{})}
	if len(configured) > 0 || list == nil {
		close(c.done)
		return c
	}
	var once sync.Once
	go once.Do(func() {
		defer close(c.done)
		ctx, cancel := context.WithTimeout(context.Background(), modelListTimeout)
		defer cancel()
		ids, err := list(ctx)
		if err != nil {
			log(err)
			return
		}
		for _, id := range ids {
			c.fetched = append(c.fetched, ModelConfig{ID: id})
		}
	})
	return c
}

// modelListTimeout bounds the provider's model listing.
const modelListTimeout = 10 * time.Second

// models returns the list, waiting at most until ctx ends for the fetch
// (then without the provider's models).
func (c *modelCatalog) models(ctx context.Context) []ModelConfig {
	if len(c.configured) > 0 {
		return c.configured
	}
	select {
	case <-c.done:
		return c.fetched
	case <-ctx.Done():
		return nil
	}
}

// choices is models for the bridge.
func (c *modelCatalog) choices(ctx context.Context) []acp.ModelChoice {
	ms := c.models(ctx)
	out := make([]acp.ModelChoice, len(ms))
	for i, m := range ms {
		out[i] = acp.ModelChoice{ID: m.ID, Name: m.Name, Description: m.Description, Thinking: m.Thinking == nil || *m.Thinking, Images: m.Images}
	}
	return out
}

// acceptsImages reports whether the configured model id accepts images.
func acceptsImages(models []ModelConfig, id string) bool {
	for _, m := range models {
		if m.ID == id {
			return m.Images
		}
	}
	return false
}
