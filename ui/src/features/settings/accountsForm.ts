// The Accounts section's form logic (mail and CalDAV/CardDAV accounts), kept apart from the
// component so it is unit-tested without a Tauri runtime: defaults, the port that follows the
// security choice, validation with a sentence per problem, and the password rule (blank on an
// edit keeps the stored one; it is never read back).
import type {
  AccountCheck,
  DavAccountInput,
  DavAccountView,
  MailAccountInput,
  MailAccountView,
} from "../../gen";

export type Security = "tls" | "starttls" | "plain";

export const SECURITY: ReadonlyArray<{ id: Security; label: string }> = [
  { id: "tls", label: "SSL/TLS" },
  { id: "starttls", label: "STARTTLS" },
  { id: "plain", label: "None (this computer only)" },
];

export const DAV_KINDS: ReadonlyArray<{ id: string; label: string }> = [
  { id: "dav", label: "Calendars and contacts" },
  { id: "caldav", label: "Calendars only (CalDAV)" },
  { id: "carddav", label: "Contacts only (CardDAV)" },
];

/** The port a server listens on by default for its security (as the core assumes when unset). */
export function defaultPort(server: "imap" | "smtp", security: Security): number {
  if (server === "imap") return security === "tls" ? 993 : 143;
  return { tls: 465, starttls: 587, plain: 25 }[security];
}

export interface MailForm {
  /** The name being edited; `null` when adding. */
  previousName: string | null;
  name: string;
  email: string;
  displayName: string;
  username: string;
  imapHost: string;
  imapPort: string;
  imapSecurity: Security;
  smtpHost: string;
  smtpPort: string;
  smtpSecurity: Security;
  sentFolder: string;
  password: string;
}

export const EMPTY_MAIL_FORM: MailForm = {
  previousName: null,
  name: "",
  email: "",
  displayName: "",
  username: "",
  imapHost: "",
  imapPort: "993",
  imapSecurity: "tls",
  smtpHost: "",
  smtpPort: "465",
  smtpSecurity: "tls",
  sentFolder: "Sent",
  password: "",
};

function security(value: string): Security {
  return value === "starttls" || value === "plain" ? value : "tls";
}

/** The form for editing a stored account; the password field starts blank (kept unless typed). */
export function mailFormFrom(view: MailAccountView): MailForm {
  const imapSecurity = security(view.imap.tls);
  const smtpSecurity = security(view.smtp.tls);
  return {
    previousName: view.name,
    name: view.name,
    email: view.email,
    displayName: view.display_name,
    username: view.username,
    imapHost: view.imap.host,
    imapPort: String(view.imap.port ?? defaultPort("imap", imapSecurity)),
    imapSecurity,
    smtpHost: view.smtp.host,
    smtpPort: String(view.smtp.port ?? defaultPort("smtp", smtpSecurity)),
    smtpSecurity,
    sentFolder: view.sent_folder,
    password: "",
  };
}

/**
 * The port after the security changed from `before` to `after`: the new default when the field
 * held the old default (or nothing), else what the person typed.
 */
export function portAfterSecurityChange(
  server: "imap" | "smtp",
  port: string,
  before: Security,
  after: Security,
): string {
  const trimmed = port.trim();
  return trimmed === "" || trimmed === String(defaultPort(server, before)) ? String(defaultPort(server, after)) : port;
}

/** `imap.example.com` / `smtp.example.com` from the address, for hosts left empty. */
export function suggestedHosts(email: string): { imap: string; smtp: string } | null {
  const at = email.trim().lastIndexOf("@");
  const domain = at > 0 ? email.trim().slice(at + 1).toLowerCase() : "";
  if (!/^[a-z0-9.-]+\.[a-z]{2,}$/.test(domain)) return null;
  return { imap: `imap.${domain}`, smtp: `smtp.${domain}` };
}

const MAIL_NAME = /^[A-Za-z0-9._-]{1,64}$/;
const DAV_NAME = /^[A-Za-z0-9_-]{1,64}$/;
const EMAIL = /^[^\s@]+@[^\s@]+$/;
const HOST = /^[^\s/:]+$|^\[[0-9a-fA-F:]+\]$/;

function port(value: string, what: string): number | { problem: string } {
  const trimmed = value.trim();
  const number = Number(trimmed);
  if (!/^\d+$/.test(trimmed) || number < 1 || number > 65535) {
    return { problem: `The ${what} port must be a number from 1 to 65535.` };
  }
  return number;
}

/** What to send for a filled-in mail form, or the first problem in words. */
export function mailInput(form: MailForm): { input: MailAccountInput } | { problem: string } {
  const name = form.name.trim();
  if (!MAIL_NAME.test(name)) {
    return { problem: "The name is 1 to 64 letters, digits, dots, dashes or underscores (e.g. work)." };
  }
  if (!EMAIL.test(form.email.trim())) return { problem: "Enter the email address, like you@example.com." };
  if (!HOST.test(form.imapHost.trim())) return { problem: "Enter the IMAP server's host name (e.g. imap.example.com)." };
  if (!HOST.test(form.smtpHost.trim())) return { problem: "Enter the SMTP server's host name (e.g. smtp.example.com)." };
  const imapPort = port(form.imapPort, "IMAP");
  if (typeof imapPort !== "number") return imapPort;
  const smtpPort = port(form.smtpPort, "SMTP");
  if (typeof smtpPort !== "number") return smtpPort;
  if (form.previousName === null && form.password === "") {
    return { problem: "Enter the password (or an app password, for providers that require one)." };
  }
  return {
    input: {
      previous_name: form.previousName,
      name,
      email: form.email.trim(),
      display_name: form.displayName.trim(),
      username: form.username.trim(),
      imap: { host: form.imapHost.trim(), port: imapPort, tls: form.imapSecurity },
      smtp: { host: form.smtpHost.trim(), port: smtpPort, tls: form.smtpSecurity },
      sent_folder: form.sentFolder.trim(),
      // Blank: keep the stored password.
      password: form.password === "" ? null : form.password,
    },
  };
}

export interface DavForm {
  previousName: string | null;
  name: string;
  kind: string;
  url: string;
  username: string;
  password: string;
}

export const EMPTY_DAV_FORM: DavForm = {
  previousName: null,
  name: "",
  kind: "dav",
  url: "",
  username: "",
  password: "",
};

export function davFormFrom(view: DavAccountView): DavForm {
  return {
    previousName: view.name,
    name: view.name,
    kind: view.kind,
    url: view.url,
    username: view.username,
    password: "",
  };
}

/** What to send for a filled-in calendar and contacts form, or the first problem in words. */
export function davInput(form: DavForm): { input: DavAccountInput } | { problem: string } {
  const name = form.name.trim();
  if (!DAV_NAME.test(name)) {
    return { problem: "The name is 1 to 64 letters, digits, dashes or underscores (e.g. home)." };
  }
  let url: URL;
  try {
    url = new URL(form.url.trim());
  } catch {
    return { problem: "Enter the server's address, like https://dav.example.com/." };
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") {
    return { problem: "The server's address starts with https:// (or http:// on this computer)." };
  }
  if (form.username.trim() === "") return { problem: "Enter the username." };
  return {
    input: {
      previous_name: form.previousName,
      name,
      kind: form.kind,
      url: form.url.trim(),
      username: form.username.trim(),
      password: form.password === "" ? null : form.password,
    },
  };
}

/** A test's state as the list shows it. */
export type CheckState = "checking" | AccountCheck | undefined;

export function checkLabel(state: CheckState): string {
  if (state === undefined) return "Not checked";
  if (state === "checking") return "Checking…";
  return state.ok ? "Works" : "Does not work";
}
