package core

// Header is what Callsign reads from and writes into a message's header:
// the parser fills it, the composer writes it, and a stored message keeps
// it. The Date header travels beside it in the parsed and composed forms
// only: a stored message has no date of its own but the time it was stored
// (EmailMessage.CreatedAt).
type Header struct {
	MessageID  string   // without angle brackets
	InReplyTo  string   // without angle brackets
	References []string // without angle brackets, oldest first
	FromEmail  string   // bare address
	FromName   string   // display name, in UTF-8
	To         []string // bare addresses
	Cc         []string
	Subject    string // in UTF-8
}
