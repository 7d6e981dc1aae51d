package model_test

import (
	"testing"

	"github.com/agentrt/agentrt/model"
)

func TestMatchMediaAndDescribe(t *testing.T) {
	for _, tc := range []struct {
		patterns []string
		typ      string
		want     bool
	}{
		{[]string{"image/*"}, "image/png", true},
		{[]string{"image/*"}, "imagex/png", false},
		{[]string{"application/pdf"}, "application/pdf", true},
		{[]string{"application/pdf"}, "application/json", false},
		{[]string{"*/*"}, "audio/ogg", true},
		{nil, "image/png", false},
	} {
		if got := model.MatchMedia(tc.patterns, tc.typ); got != tc.want {
			t.Errorf("MatchMedia(%q, %q) = %v", tc.patterns, tc.typ, got)
		}
	}
	for m, want := range map[*model.Media]string{
		{Type: "image/jpeg", Name: "cat.jpg", Size: 3 << 20}: "[an image: cat.jpg, image/jpeg, 3.0 MB, not shown to this model]",
		{Type: "text/csv", Size: 12}:                         "[a file: unnamed, text/csv, 12 bytes, not shown to this model]",
	} {
		if got := m.Describe(); got != want {
			t.Errorf("Describe() = %q, want %q", got, want)
		}
	}
}
