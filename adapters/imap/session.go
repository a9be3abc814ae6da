package imap

import (
	"context"
	"io"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapserver"

	"github.com/callsign/callsign/app"
	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// session is one client connection. go-imap calls it from the connection's
// goroutine, except Idle, which may still be finishing when Close runs: mu
// guards the selected mailbox.
type session struct {
	srv    *Server
	remote string
	login  *app.MailboxLogin

	mu  sync.Mutex
	sel *selection
}

// selection is the selected mailbox as this client knows it: entries in
// sequence-number order (sequence number = index + 1), with the read state
// the client was last told. A message deleted through the API stays here
// until the client may be told (EXPUNGE is not allowed during FETCH, STORE
// and SEARCH, whose sequence numbers it would shift).
type selection struct {
	box      *app.Mailbox
	readOnly bool
	entries  []ports.MailboxEntry
	// deleted holds \Deleted flags for this session only: IMAP deletes
	// nothing, and EXPUNGE of a flagged message says so.
	deleted map[int64]bool
}

var (
	_ imapserver.Session     = (*session)(nil)
	_ imapserver.SessionMove = (*session)(nil)
)

// IMAP answers for what this server does not do, and for failures.
var (
	errFixedFolders = &imap.Error{Type: imap.StatusResponseTypeNo, Code: imap.ResponseCodeCannot,
		Text: "The folders are fixed: INBOX (received mail), Sent (outgoing mail) and Junk (mail filed as spam)."}
	errNoAppend = &imap.Error{Type: imap.StatusResponseTypeNo, Code: imap.ResponseCodeCannot,
		Text: "APPEND is not supported: mail arrives over SMTP and is sent through the API."}
	errNoCopy = &imap.Error{Type: imap.StatusResponseTypeNo, Code: imap.ResponseCodeCannot,
		Text: "COPY and MOVE are not supported: every message stays in the folder it arrived in."}
	errNoExpunge = &imap.Error{Type: imap.StatusResponseTypeNo, Code: imap.ResponseCodeCannot,
		Text: "Deleting over IMAP is not supported: delete messages through the API; messages marked \\Deleted stay."}
	errReadOnly = &imap.Error{Type: imap.StatusResponseTypeNo, Code: imap.ResponseCodeCannot,
		Text: "The mailbox is open read-only (EXAMINE)."}
	errTooManyLogins = &imap.Error{Type: imap.StatusResponseTypeNo, Code: imap.ResponseCodeUnavailable,
		Text: "Too many failed logins from your address; try again in a minute."}
	errTryLater = &imap.Error{Type: imap.StatusResponseTypeNo, Code: imap.ResponseCodeUnavailable,
		Text: "Temporary failure; try again later."}
)

// errServerBug answers a command that failed on a fault of ours.
var errServerBug = &imap.Error{Type: imap.StatusResponseTypeNo, Code: imap.ResponseCodeServerBug,
	Text: "The server failed on this command; the failure is logged."}

// recoverCommand turns a panic in a command into a NO answer to that command
// alone: the session goes on, and one message the server cannot serve does
// not cut a mail client off. Commands work out their answer before writing
// it, so nothing half-written is left behind.
func (se *session) recoverCommand(command string, err *error) {
	if r := recover(); r != nil {
		se.srv.log.Error("imap: a command failed on a bug", "command", command, "remote", se.remote,
			"panic", r, "stack", string(debug.Stack()))
		*err = errServerBug
	}
}

func noSuchMailbox(err error) error {
	return &imap.Error{Type: imap.StatusResponseTypeNo, Code: imap.ResponseCodeNonExistent, Text: err.Error()}
}

// fail turns an app error into an IMAP answer; faults of ours are logged
// and answered without their text.
func (se *session) fail(what string, err error) error {
	if core.KindOf(err) == core.KindNotFound {
		return noSuchMailbox(err)
	}
	se.srv.log.Error("imap: "+what+" failed", "remote", se.remote, "err", err)
	return errTryLater
}

func (se *session) context() (context.Context, context.CancelFunc) {
	return context.WithTimeout(se.srv.ctx, commandTimeout)
}

func (se *session) Close() error { return nil }

// Login takes the inbox's address and an identity key. Failures count
// against the inbox and the client's address; past the limit nothing is
// even checked.
func (se *session) Login(username, password string) error {
	if !se.srv.limiter.allowed(se.remote, username) {
		return errTooManyLogins
	}
	ctx, cancel := se.context()
	defer cancel()
	login, err := se.srv.mailboxes.Login(ctx, username, password)
	switch {
	case core.KindOf(err) == core.KindUnauthorized:
		se.srv.limiter.failed(se.remote, username)
		return imapserver.ErrAuthFailed
	case err != nil:
		return se.fail("logging in", err)
	}
	se.login = &login
	return nil
}

// open opens a folder of the logged-in inbox and lists it.
func (se *session) open(ctx context.Context, name string) (*app.Mailbox, []ports.MailboxEntry, error) {
	box, err := se.srv.mailboxes.Open(*se.login, name)
	if err != nil {
		return nil, nil, noSuchMailbox(err)
	}
	entries, err := box.List(ctx)
	if err != nil {
		return nil, nil, se.fail("listing "+name, err)
	}
	return box, entries, nil
}

func (se *session) Select(name string, options *imap.SelectOptions) (_ *imap.SelectData, err error) {
	defer se.recoverCommand("SELECT", &err)
	ctx, cancel := se.context()
	defer cancel()
	box, entries, err := se.open(ctx, name)
	if err != nil {
		return nil, err
	}
	se.mu.Lock()
	se.sel = &selection{box: box, readOnly: options.ReadOnly, entries: entries, deleted: map[int64]bool{}}
	se.mu.Unlock()
	data := &imap.SelectData{
		Flags:          folderFlags(entries),
		PermanentFlags: []imap.Flag{imap.FlagSeen, imap.FlagWildcard},
		NumMessages:    uint32(len(entries)),
		UIDNext:        uidNext(entries),
		UIDValidity:    box.UIDValidity(),
	}
	for i, e := range entries {
		if !e.IsRead {
			data.FirstUnseenSeqNum = uint32(i + 1)
			break
		}
	}
	return data, nil
}

// folderFlags are the flags a folder's messages may show: \Seen,
// \Deleted, and the labels (keywords) its messages carry.
func folderFlags(entries []ports.MailboxEntry) []imap.Flag {
	labels := make([][]string, len(entries))
	for i, e := range entries {
		labels[i] = e.Labels
	}
	flags := []imap.Flag{imap.FlagSeen, imap.FlagDeleted}
	for _, l := range core.UnionLabels(labels...) {
		flags = append(flags, imap.Flag(l))
	}
	return flags
}

// uidNext is above every UID of the folder. Ids are shared by every inbox,
// so the next message may take a larger one: RFC 3501 asks only that
// UIDNEXT grow when messages are added, which it does.
func uidNext(entries []ports.MailboxEntry) imap.UID {
	if len(entries) == 0 {
		return 1
	}
	return uidOf(entries[len(entries)-1]) + 1
}

// uidOf is a message's UID: its id, which is never reused.
func uidOf(e ports.MailboxEntry) imap.UID { return imap.UID(e.ID) }

func (se *session) Create(string, *imap.CreateOptions) error         { return errFixedFolders }
func (se *session) Delete(string) error                              { return errFixedFolders }
func (se *session) Rename(string, string, *imap.RenameOptions) error { return errFixedFolders }

// Subscribe and Unsubscribe accept the two folders, which are always there.
func (se *session) Subscribe(name string) error   { return se.knownFolder(name) }
func (se *session) Unsubscribe(name string) error { return se.knownFolder(name) }

func (se *session) knownFolder(name string) error {
	if _, err := se.srv.mailboxes.Open(*se.login, name); err != nil {
		return noSuchMailbox(err)
	}
	return nil
}

func (se *session) List(w *imapserver.ListWriter, ref string, patterns []string, options *imap.ListOptions) error {
	if len(patterns) == 1 && patterns[0] == "" { // asks for the hierarchy delimiter
		return w.WriteList(&imap.ListData{Attrs: []imap.MailboxAttr{imap.MailboxAttrNoSelect}, Delim: '/'})
	}
	ctx, cancel := se.context()
	defer cancel()
	for _, name := range app.MailboxNames {
		if !matchesAny(name, ref, patterns) {
			continue
		}
		data := &imap.ListData{Mailbox: name, Delim: '/', Attrs: []imap.MailboxAttr{imap.MailboxAttrHasNoChildren}}
		switch name {
		case app.MailboxSent:
			data.Attrs = append(data.Attrs, imap.MailboxAttrSent)
		case app.MailboxJunk: // RFC 6154's special use
			data.Attrs = append(data.Attrs, imap.MailboxAttrJunk)
		}
		if options.SelectSubscribed || options.ReturnSubscribed {
			data.Attrs = append(data.Attrs, imap.MailboxAttrSubscribed)
		}
		if options.ReturnStatus != nil {
			status, err := se.status(ctx, name)
			if err != nil {
				return err
			}
			data.Status = status
		}
		if err := w.WriteList(data); err != nil {
			return err
		}
	}
	return nil
}

func matchesAny(name, ref string, patterns []string) bool {
	for _, p := range patterns {
		if imapserver.MatchList(name, '/', ref, p) {
			return true
		}
	}
	return false
}

func (se *session) Status(name string, _ *imap.StatusOptions) (_ *imap.StatusData, err error) {
	defer se.recoverCommand("STATUS", &err)
	ctx, cancel := se.context()
	defer cancel()
	return se.status(ctx, name)
}

// status fills every item; go-imap writes only those asked for.
func (se *session) status(ctx context.Context, name string) (*imap.StatusData, error) {
	box, entries, err := se.open(ctx, name)
	if err != nil {
		return nil, err
	}
	var unseen, none uint32
	var size int64
	for _, e := range entries {
		if !e.IsRead {
			unseen++
		}
		size += e.Size
	}
	total := uint32(len(entries))
	return &imap.StatusData{Mailbox: box.Name, NumMessages: &total, UIDNext: uidNext(entries), UIDValidity: box.UIDValidity(),
		NumUnseen: &unseen, NumDeleted: &none, NumRecent: &none, Size: &size}, nil
}

func (se *session) Append(string, imap.LiteralReader, *imap.AppendOptions) (*imap.AppendData, error) {
	return nil, errNoAppend
}

// Poll tells the client what changed since it last heard: messages deleted
// through the API (EXPUNGE, when allowExpunge), read states and labels
// changed elsewhere (FETCH FLAGS) and new messages (EXISTS).
func (se *session) Poll(w *imapserver.UpdateWriter, allowExpunge bool) (err error) {
	defer se.recoverCommand("poll", &err)
	ctx, cancel := se.context()
	defer cancel()
	se.mu.Lock()
	defer se.mu.Unlock()
	sel := se.sel
	if sel == nil {
		return nil
	}
	fresh, err := sel.box.List(ctx)
	if err != nil {
		return se.fail("checking "+sel.box.Name, err)
	}
	now := make(map[int64]ports.MailboxEntry, len(fresh))
	for _, e := range fresh {
		now[e.ID] = e
	}
	if allowExpunge {
		// Highest first: each EXPUNGE renumbers only the messages after it.
		for i := len(sel.entries) - 1; i >= 0; i-- {
			id := sel.entries[i].ID
			if _, listed := now[id]; !listed {
				if err := w.WriteExpunge(uint32(i + 1)); err != nil {
					return err
				}
				delete(sel.deleted, id)
				sel.entries = slices.Delete(sel.entries, i, i+1)
			}
		}
	}
	for i := range sel.entries {
		e := &sel.entries[i]
		if n, ok := now[e.ID]; ok && (n.IsRead != e.IsRead || !slices.Equal(n.Labels, e.Labels)) {
			e.IsRead, e.Labels = n.IsRead, n.Labels
			if err := w.WriteMessageFlags(uint32(i+1), uidOf(*e), sel.flags(*e)); err != nil {
				return err
			}
		}
	}
	var last int64
	if n := len(sel.entries); n > 0 {
		last = sel.entries[n-1].ID
	}
	before := len(sel.entries)
	for _, e := range fresh {
		if e.ID > last {
			sel.entries = append(sel.entries, e)
		}
	}
	if len(sel.entries) > before {
		return w.WriteNumMessages(uint32(len(sel.entries)))
	}
	return nil
}

// Idle announces changes as they happen. The watcher is registered before
// the first look, so nothing stored in between goes unannounced (the race
// go-imap's own tracker has); mail stored by other instances shows at the
// next recheck.
func (se *session) Idle(w *imapserver.UpdateWriter, stop <-chan struct{}) error {
	se.mu.Lock()
	sel := se.sel
	se.mu.Unlock()
	if sel == nil {
		<-stop
		return nil
	}
	changed, unwatch := sel.box.Watch()
	defer unwatch()
	recheck := time.NewTicker(se.srv.recheck)
	defer recheck.Stop()
	for {
		if err := se.Poll(w, true); err != nil {
			return err
		}
		select {
		case <-stop:
			return nil
		case <-se.srv.ctx.Done():
			return nil
		case <-changed:
		case <-recheck.C:
		}
	}
}

func (se *session) Unselect() error {
	se.mu.Lock()
	se.sel = nil
	se.mu.Unlock()
	return nil
}

// Expunge succeeds when there is nothing to remove (so CLOSE works) and
// refuses when messages are marked \Deleted: they are never removed.
func (se *session) Expunge(_ *imapserver.ExpungeWriter, uids *imap.UIDSet) error {
	se.mu.Lock()
	defer se.mu.Unlock()
	for id := range se.sel.deleted {
		if uids == nil || uids.Contains(imap.UID(id)) {
			return errNoExpunge
		}
	}
	return nil
}

func (se *session) Copy(imap.NumSet, string) (*imap.CopyData, error) { return nil, errNoCopy }

func (se *session) Move(*imapserver.MoveWriter, imap.NumSet, string) error { return errNoCopy }

func canonicalFlag(f imap.Flag) imap.Flag { return imap.Flag(strings.ToLower(string(f))) }

func (sel *selection) flags(e ports.MailboxEntry) []imap.Flag {
	flags := []imap.Flag{}
	if e.IsRead {
		flags = append(flags, imap.FlagSeen)
	}
	if sel.deleted[e.ID] {
		flags = append(flags, imap.FlagDeleted)
	}
	for _, l := range e.Labels {
		flags = append(flags, imap.Flag(l))
	}
	return flags
}

// each calls f for every message of numSet, in sequence order; "*" is the
// last message (or the highest UID) even when a range starts above it.
func (sel *selection) each(numSet imap.NumSet, f func(seq uint32, e *ports.MailboxEntry) error) error {
	if len(sel.entries) == 0 {
		return nil
	}
	var contains func(seq uint32, e ports.MailboxEntry) bool
	switch set := numSet.(type) {
	case imap.SeqSet:
		static := staticSeqSet(set, uint32(len(sel.entries)))
		contains = func(seq uint32, _ ports.MailboxEntry) bool { return static.Contains(seq) }
	case imap.UIDSet:
		static := staticUIDSet(set, uidOf(sel.entries[len(sel.entries)-1]))
		contains = func(_ uint32, e ports.MailboxEntry) bool { return static.Contains(uidOf(e)) }
	default:
		return nil
	}
	for i := range sel.entries {
		seq := uint32(i + 1)
		if contains(seq, sel.entries[i]) {
			if err := f(seq, &sel.entries[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

func staticSeqSet(set imap.SeqSet, max uint32) imap.SeqSet {
	out := make(imap.SeqSet, len(set))
	for i, r := range set {
		out[i].Start, out[i].Stop = staticRange(r.Start, r.Stop, max)
	}
	return out
}

func staticUIDSet(set imap.UIDSet, max imap.UID) imap.UIDSet {
	out := make(imap.UIDSet, len(set))
	for i, r := range set {
		start, stop := staticRange(uint32(r.Start), uint32(r.Stop), uint32(max))
		out[i].Start, out[i].Stop = imap.UID(start), imap.UID(stop)
	}
	return out
}

// staticRange replaces "*" (0) by max, ordering the ends as RFC 3501 asks.
func staticRange(start, stop, max uint32) (uint32, uint32) {
	if start == 0 {
		start = max
	}
	if stop == 0 {
		stop = max
	}
	if start > stop {
		start, stop = stop, start
	}
	return start, stop
}

// Fetch answers from the stored raw source. Fetching a body without PEEK
// marks the message read, as RFC 3501 asks, unless the mailbox is read-only.
func (se *session) Fetch(w *imapserver.FetchWriter, numSet imap.NumSet, options *imap.FetchOptions) (err error) {
	defer se.recoverCommand("FETCH", &err)
	ctx, cancel := se.context()
	defer cancel()
	se.mu.Lock()
	defer se.mu.Unlock()
	sel := se.sel
	markSeen := false
	for _, bs := range options.BodySection {
		markSeen = markSeen || !bs.Peek
	}
	for _, bs := range options.BinarySection {
		markSeen = markSeen || !bs.Peek
	}
	markSeen = markSeen && !sel.readOnly
	needRaw := options.Envelope || options.BodyStructure != nil || len(options.BodySection) > 0 ||
		len(options.BinarySection) > 0 || len(options.BinarySectionSize) > 0
	return sel.each(numSet, func(seq uint32, e *ports.MailboxEntry) error {
		var msg *entity
		if needRaw {
			raw, err := sel.box.Raw(ctx, e.ID)
			if core.KindOf(err) == core.KindNotFound {
				return nil // deleted; EXPUNGE follows (RFC 2180 §4.1.3 lets a FETCH of it say nothing)
			} else if err != nil {
				return se.fail("reading a message", err)
			}
			msg = parseMessage(raw)
		}
		flagsChanged := false
		if markSeen && !e.IsRead {
			if err := sel.box.SetSeen(ctx, e.ID, true); err != nil {
				return se.fail("marking a message read", err)
			}
			e.IsRead, flagsChanged = true, true
		}
		items := fetchItems(*e, msg, sel.flags(*e), options, flagsChanged)
		return items.write(w.CreateMessage(seq))
	})
}

// fetched holds a FETCH response's items, all worked out before the first
// byte of the response is written: a failure while working them out then
// leaves nothing half-written, and the session goes on.
type fetched struct {
	uid          imap.UID
	flags        []imap.Flag // nil: not asked for
	internalDate time.Time
	size         int64
	envelope     *imap.Envelope
	structure    imap.BodyStructure
	options      *imap.FetchOptions
	sections     [][]byte
	binaries     [][]byte
	binarySizes  []uint32
}

func fetchItems(e ports.MailboxEntry, msg *entity, flags []imap.Flag, options *imap.FetchOptions, flagsChanged bool) fetched {
	f := fetched{uid: uidOf(e), internalDate: e.CreatedAt, size: e.Size, options: options}
	if options.Flags || flagsChanged {
		f.flags = flags
	}
	if options.Envelope {
		f.envelope = msg.envelope()
	}
	if options.BodyStructure != nil {
		f.structure = msg.structure()
	}
	for _, bs := range options.BodySection {
		f.sections = append(f.sections, partial(msg.section(bs), bs.Partial))
	}
	for _, bs := range options.BinarySection {
		f.binaries = append(f.binaries, partial(msg.binary(bs.Part), bs.Partial))
	}
	for _, bss := range options.BinarySectionSize {
		f.binarySizes = append(f.binarySizes, uint32(len(msg.binary(bss.Part))))
	}
	return f
}

func (f fetched) write(w *imapserver.FetchResponseWriter) error {
	w.WriteUID(f.uid)
	if f.flags != nil {
		w.WriteFlags(f.flags)
	}
	if f.options.InternalDate {
		w.WriteInternalDate(f.internalDate)
	}
	if f.options.RFC822Size {
		w.WriteRFC822Size(f.size)
	}
	if f.envelope != nil {
		w.WriteEnvelope(f.envelope)
	}
	if f.structure != nil {
		w.WriteBodyStructure(f.structure)
	}
	for i, bs := range f.options.BodySection {
		if err := writeLiteral(w.WriteBodySection(bs, int64(len(f.sections[i]))), f.sections[i]); err != nil {
			return err
		}
	}
	for i, bs := range f.options.BinarySection {
		if err := writeLiteral(w.WriteBinarySection(bs, int64(len(f.binaries[i]))), f.binaries[i]); err != nil {
			return err
		}
	}
	for i, bss := range f.options.BinarySectionSize {
		w.WriteBinarySectionSize(bss, f.binarySizes[i])
	}
	return w.Close()
}

func writeLiteral(wc io.WriteCloser, b []byte) error {
	_, err := wc.Write(b)
	if cerr := wc.Close(); err == nil {
		err = cerr
	}
	return err
}

// Store changes \Seen, which is is_read, and keywords, which are labels,
// and keeps \Deleted for this session only; other system flags are not
// kept (they are not in PERMANENTFLAGS). Keywords that are no label are
// refused before anything changes.
func (se *session) Store(w *imapserver.FetchWriter, numSet imap.NumSet, flags *imap.StoreFlags, _ *imap.StoreOptions) (err error) {
	defer se.recoverCommand("STORE", &err)
	ctx, cancel := se.context()
	defer cancel()
	se.mu.Lock()
	defer se.mu.Unlock()
	sel := se.sel
	if sel.readOnly {
		return errReadOnly
	}
	keywords, err := keywordLabels(flags.Flags)
	if err != nil {
		return err
	}
	has := func(f imap.Flag) bool {
		for _, g := range flags.Flags {
			if canonicalFlag(g) == canonicalFlag(f) {
				return true
			}
		}
		return false
	}
	return sel.each(numSet, func(seq uint32, e *ports.MailboxEntry) error {
		seen, deleted := e.IsRead, sel.deleted[e.ID]
		switch flags.Op {
		case imap.StoreFlagsSet:
			seen, deleted = has(imap.FlagSeen), has(imap.FlagDeleted)
		case imap.StoreFlagsAdd:
			seen, deleted = seen || has(imap.FlagSeen), deleted || has(imap.FlagDeleted)
		case imap.StoreFlagsDel:
			seen, deleted = seen && !has(imap.FlagSeen), deleted && !has(imap.FlagDeleted)
		}
		if seen != e.IsRead {
			err := sel.box.SetSeen(ctx, e.ID, seen)
			if core.KindOf(err) == core.KindNotFound {
				return nil // deleted through the API; EXPUNGE follows
			} else if err != nil {
				return se.fail("marking a message", err)
			}
			e.IsRead = seen
		}
		labels := e.Labels
		switch flags.Op {
		case imap.StoreFlagsSet:
			labels = keywords
		case imap.StoreFlagsAdd:
			labels = core.UnionLabels(e.Labels, keywords)
		case imap.StoreFlagsDel:
			labels = slices.DeleteFunc(slices.Clone(e.Labels), func(l string) bool { return slices.Contains(keywords, l) })
		}
		if err := se.relabel(ctx, sel.box, e, labels); err != nil {
			return err
		}
		if deleted {
			sel.deleted[e.ID] = true
		} else {
			delete(sel.deleted, e.ID)
		}
		if flags.Silent {
			return nil
		}
		return fetchItems(*e, nil, sel.flags(*e), &imap.FetchOptions{Flags: true}, false).write(w.CreateMessage(seq))
	})
}

// keywordLabels are the labels the keywords (the flags without a
// backslash) of a STORE name, sorted; a keyword that is no label is
// refused with the reason.
func keywordLabels(flags []imap.Flag) ([]string, error) {
	var labels []string
	for _, f := range flags {
		if strings.HasPrefix(string(f), "\\") {
			continue
		}
		label, err := core.ParseLabel("keyword", string(f))
		if err != nil {
			return nil, &imap.Error{Type: imap.StatusResponseTypeNo, Code: imap.ResponseCodeCannot, Text: err.Error()}
		}
		labels = append(labels, label)
	}
	return core.UnionLabels(labels), nil
}

// relabel moves a message's labels to want, one label at a time (each a
// change the event log tells; removals first, so that replacing labels
// of a full message works), and keeps e up to date as it goes.
func (se *session) relabel(ctx context.Context, box *app.Mailbox, e *ports.MailboxEntry, want []string) error {
	for _, add := range []bool{false, true} {
		from, to := want, e.Labels // additions: in want, not on e
		if !add {
			from, to = e.Labels, want
		}
		for _, l := range from {
			if slices.Contains(to, l) {
				continue
			}
			err := box.Label(ctx, e.ID, l, add)
			switch {
			case core.KindOf(err) == core.KindNotFound:
				return nil // deleted through the API; EXPUNGE follows
			case core.KindOf(err) == core.KindConflict:
				return &imap.Error{Type: imap.StatusResponseTypeNo, Code: imap.ResponseCodeLimit, Text: err.Error()}
			case err != nil:
				return se.fail("labelling a message", err)
			}
			if add {
				e.Labels = core.UnionLabels(e.Labels, []string{l})
			} else {
				e.Labels = slices.DeleteFunc(slices.Clone(e.Labels), func(k string) bool { return k == l })
			}
		}
	}
	return nil
}
