package app

import "testing"

// One watcher of several inboxes hears a change to any of them, once per
// look, and nothing after it stops.
func TestChangeFeedWatchesSeveralInboxes(t *testing.T) {
	var f changeFeed[int64]
	ch, stop := f.watch(1, 2)
	f.notify(2)
	f.notify(1, 2)
	select {
	case <-ch:
	default:
		t.Fatal("a change to inbox 2 was not signalled")
	}
	select {
	case <-ch:
		t.Fatal("a watcher not yet looking keeps one signal, not one per change")
	default:
	}
	f.notify(3)
	select {
	case <-ch:
		t.Fatal("a change to an inbox not watched was signalled")
	default:
	}
	stop()
	if len(f.watchers) != 0 {
		t.Errorf("stop left watchers behind: %v", f.watchers)
	}
}
