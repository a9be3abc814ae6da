package e2e

import (
	"fmt"
	"net/smtp"
	"strings"
)

// send delivers one small message on an open connection, with id as its Message-ID.
func send(c *smtp.Client, to, id string) error {
	if err := c.Mail("load@faults.test"); err != nil {
		return err
	}
	if err := c.Rcpt(to); err != nil {
		return err
	}
	w, err := c.Data()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "From: load@faults.test\r\nTo: %s\r\nSubject: fault %s\r\nMessage-ID: <%s>\r\n\r\n%s\r\n", to, id, id, strings.Repeat("body ", 40))
	return w.Close()
}
