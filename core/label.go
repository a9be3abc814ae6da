package core

import (
	"slices"
	"strings"
)

// This file holds the rules of labels: the words an agent (or a mail
// client, as IMAP keywords) puts on a message to keep its own state. A
// thread's labels are the union of its messages'.

// MaxLabelLength bounds a label, in characters.
const MaxLabelLength = 64

// MaxLabels bounds the labels of one message, and the labels one list
// filter names.
const MaxLabels = 20

// ParseLabel reads a label as a caller wrote it: ASCII letters are folded
// to lower case (IMAP keywords ignore case), and what is left must be 1–64
// characters of a-z, 0-9, '.', '_' and '-', starting with a letter or a
// digit, or with one '$' before it: the form of mail clients' own keywords
// ($forwarded, $junk, $label1), so that they round-trip. field names the
// input in the error.
func ParseLabel(field, s string) (string, error) {
	label := strings.ToLower(s)
	switch {
	case label == "":
		return "", Invalid(field, "A label is 1 to %d characters.", MaxLabelLength)
	case len(label) > MaxLabelLength:
		return "", Invalid(field, "A label is at most %d characters.", MaxLabelLength)
	case !validLabel(label):
		return "", Invalid(field, "%q is not a label: use a-z, 0-9, '.', '_' and '-', starting with a letter or digit (or $ then one).", s)
	}
	return label, nil
}

func validLabel(label string) bool {
	rest := strings.TrimPrefix(label, "$")
	if rest == "" || !labelStart(rest[0]) {
		return false
	}
	for i := 1; i < len(rest); i++ {
		if c := rest[i]; !labelStart(c) && c != '.' && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

func labelStart(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }

// ParseLabels reads a list filter's comma-separated labels (ParseLabel
// each, duplicates dropped), at most MaxLabels of them; "" is none.
func ParseLabels(field, s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var labels []string
	for _, part := range strings.Split(s, ",") {
		label, err := ParseLabel(field, strings.TrimSpace(part))
		if err != nil {
			return nil, err
		}
		if !slices.Contains(labels, label) {
			labels = append(labels, label)
		}
	}
	if len(labels) > MaxLabels {
		return nil, Invalid(field, "Name at most %d labels.", MaxLabels)
	}
	return labels, nil
}

// AddLabel is a message's labels (sorted) with label added, and whether
// that changed them: a label the message carries already changes nothing,
// and a message carrying MaxLabels takes no other (Conflict). Stores call
// it inside the transaction that holds the message.
func AddLabel(labels []string, label string) ([]string, bool, error) {
	i, found := slices.BinarySearch(labels, label)
	if found {
		return labels, false, nil
	}
	if len(labels) >= MaxLabels {
		return labels, false, Conflict("A message carries at most %d labels; remove one first.", MaxLabels)
	}
	return slices.Insert(slices.Clone(labels), i, label), true, nil
}

// RemoveLabel is a message's labels (sorted) without label, and whether
// that changed them.
func RemoveLabel(labels []string, label string) ([]string, bool) {
	i, found := slices.BinarySearch(labels, label)
	if !found {
		return labels, false
	}
	return slices.Delete(slices.Clone(labels), i, i+1), true
}

// HasLabels reports whether labels (a message's or a thread's) hold every
// label of all and none of none: the list filters labels and
// exclude_labels.
func HasLabels(labels, all, none []string) bool {
	for _, l := range all {
		if !slices.Contains(labels, l) {
			return false
		}
	}
	for _, l := range none {
		if slices.Contains(labels, l) {
			return false
		}
	}
	return true
}

// UnionLabels is the sorted union of lists of labels: a thread's, of its
// messages'.
func UnionLabels(lists ...[]string) []string {
	var all []string
	for _, l := range lists {
		all = append(all, l...)
	}
	slices.Sort(all)
	return slices.Compact(all)
}

// Labeling is the subject of email.labeled and email.unlabeled: the
// message as it now is, and the label added or removed.
type Labeling struct {
	Message EmailMessage
	Label   string
}

// LabelEvent is email.labeled (added) or email.unlabeled: a label of m
// changed. A label added or removed that was already so makes none.
func LabelEvent(m EmailMessage, label string, added bool) NewEvent {
	t := EmailUnlabeled
	if added {
		t = EmailLabeled
	}
	return NewEvent{AccountID: m.AccountID, IdentityID: m.IdentityID, Type: t, Subject: Labeling{Message: m, Label: label}}
}
