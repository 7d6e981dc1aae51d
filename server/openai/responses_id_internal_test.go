package openai

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A response id names its turn, and a turn that answered a waiting run
// the chain of responses before it: parsed, it gives back the same id,
// and its previous response's.
func TestResponseIDRoundTrip(t *testing.T) {
	input := responseRef{session: "s1", after: 4, input: "in_1", inbox: 7, background: true}
	answer := responseRef{session: "s1", after: 12, prev: &input}
	again := responseRef{session: "s1", after: 20, prev: &answer}
	for _, ref := range []responseRef{input, answer, again} {
		id := ref.id()
		got, err := parseResponseID(id, "")
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		if diff := cmp.Diff(ref, got, cmp.AllowUnexported(responseRef{})); diff != "" {
			t.Errorf("%s parsed (-want +got):\n%s", id, diff)
		}
		if got.id() != id {
			t.Errorf("%s parsed gives %s", id, got.id())
		}
	}
	if got, _ := parseResponseID(again.id(), ""); got.prev.id() != answer.id() || got.prev.prev.id() != input.id() {
		t.Errorf("the chain of %s: %s, %s", again.id(), got.prev.id(), got.prev.prev.id())
	}
	// An id of the first format (session, after, input) still reads.
	legacy := "resp_czEANABpbl8x" // "s1\x004\x00in_1"
	got, err := parseResponseID(legacy, "")
	if err != nil || got.session != "s1" || got.after != 4 || got.input != "in_1" || got.id() != legacy {
		t.Errorf("legacy id: %+v %v", got, err)
	}
	for _, bad := range []string{"resp_", "resp_czE", "resp_czEAeABpbl8xADAAYg", "resp_czEANABpbl8xADAAYgA0", "resp_czEANABpbl8xADAAeA", "nope"} {
		if _, err := parseResponseID(bad, ""); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}
