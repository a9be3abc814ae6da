package client

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
)

// The client's types mirror the API's objects: each has exactly the
// properties its schema in the OpenAPI document has, so that a field the
// API gains or loses shows here and not as a silent gap in the CLI's JSON
// or a tool's result.
func TestTypesMatchTheOpenAPIDocument(t *testing.T) {
	raw, err := os.ReadFile("../adapters/httpapi/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]any `yaml:"properties"`
				AllOf      []struct {
					Ref        string         `yaml:"$ref"`
					Properties map[string]any `yaml:"properties"`
				} `yaml:"allOf"`
			} `yaml:"schemas"`
		} `yaml:"components"`
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	var properties func(name string) []string
	properties = func(name string) []string {
		s, ok := doc.Components.Schemas[name]
		if !ok {
			t.Fatalf("no schema %s", name)
		}
		var names []string
		for p := range s.Properties {
			names = append(names, p)
		}
		for _, part := range s.AllOf {
			if part.Ref != "" {
				names = append(names, properties(strings.TrimPrefix(part.Ref, "#/components/schemas/"))...)
			}
			for p := range part.Properties {
				names = append(names, p)
			}
		}
		slices.Sort(names)
		return names
	}
	for schema, v := range map[string]any{
		"Whoami": Whoami{}, "Identity": Identity{}, "Inbox": Inbox{}, "EmailMessage": Message{}, "Attachment": Attachment{},
		"Recipient": Recipient{}, "PaginatedEmailMessages": MessagePage{}, "ThreadSummary": Thread{},
		"ThreadDetail": ThreadDetail{}, "SMSMessage": SMS{}, "Conversation": Conversation{}, "ConversationDetail": ConversationDetail{},
		"VoiceAgent": VoiceAgent{}, "Contact": Contact{}, "Password": Password{}, "Secret": Secret{},
		"Verification": Verification{}, "Draft": EmailDraft{}, "SMSMessagePage": Page[SMS]{}, "ContactPage": Page[Contact]{},
		"Event": Event{}, "PaginatedEvents": Page[Event]{}, "ReceivedVerification": ReceivedVerification{},
	} {
		if got, want := jsonNames(t, v), properties(schema); !slices.Equal(got, want) {
			t.Errorf("%T has %v; the schema %s has %v", v, got, schema, want)
		}
	}
}

// jsonNames are the JSON property names of a struct value, in order.
func jsonNames(t *testing.T, v any) []string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	json.Unmarshal(b, &m)
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}
