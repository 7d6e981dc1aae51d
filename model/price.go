package model

import (
	"context"
	"iter"
)

// Price is what a model costs, in USD per million tokens.
type Price struct {
	Input, Output float64
	// Cached is the price of input tokens read from the provider's cache;
	// zero means they cost as much as other input tokens.
	Cached float64
}

// Cost returns the cost of u at p. InputTokens include the cached ones.
func (p Price) Cost(u Usage) float64 {
	cachedPrice := p.Cached
	if cachedPrice == 0 {
		cachedPrice = p.Input
	}
	cached := min(u.CachedTokens, u.InputTokens)
	return (float64(u.InputTokens-cached)*p.Input + float64(cached)*cachedPrice + float64(u.OutputTokens)*p.Output) / 1e6
}

// Priced returns m with Usage.CostUSD filled in from p, streamed or not.
func Priced(m Model, p Price) Model {
	pm := &priced{m: m, p: p}
	if _, ok := m.(Generator); ok {
		return &pricedGenerator{pm}
	}
	return pm
}

type priced struct {
	m Model
	p Price
}

func (pm *priced) Name() string { return pm.m.Name() }

func (pm *priced) Stream(ctx context.Context, req *Request) iter.Seq2[Chunk, error] {
	return func(yield func(Chunk, error) bool) {
		for c, err := range pm.m.Stream(ctx, req) {
			if c.Usage != nil {
				u := *c.Usage
				u.CostUSD = pm.p.Cost(u)
				c.Usage = &u
			}
			if !yield(c, err) {
				return
			}
		}
	}
}

// PriceOf returns the price Priced gave m, looking through models that
// wrap others (an Unwrap() Model method).
func PriceOf(m Model) (Price, bool) {
	for m != nil {
		switch pm := m.(type) {
		case *priced:
			return pm.p, true
		case *pricedGenerator:
			return pm.p, true
		case interface{ Unwrap() Model }:
			m = pm.Unwrap()
		default:
			return Price{}, false
		}
	}
	return Price{}, false
}

// Unwrap returns the priced model.
func (pm *priced) Unwrap() Model { return pm.m }

type pricedGenerator struct{ *priced }

func (pg *pricedGenerator) Generate(ctx context.Context, req *Request) (*Response, error) {
	r, err := pg.m.(Generator).Generate(ctx, req)
	if err == nil {
		r.Usage.CostUSD = pg.p.Cost(r.Usage)
	}
	return r, err
}
