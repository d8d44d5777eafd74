// The Accounts section's form logic and its IPC, against a mocked Tauri `invoke`: defaults, the
// port following the security choice, validation in words, the blank password that keeps the
// stored one, and the command names and arguments the Rust side expects.
import { beforeEach, describe, expect, it, vi } from "vitest";
import type { DavAccountView, MailAccountView } from "../../gen";

const invoke = vi.fn();
vi.mock("@tauri-apps/api/core", () => ({ invoke: (...args: unknown[]) => invoke(...args) }));

const ipc = await import("../../ipc");
const form = await import("./accountsForm");

const stored: MailAccountView = {
  name: "work",
  email: "alice@example.com",
  display_name: "Alice",
  username: "",
  imap: { host: "imap.example.com", port: null, tls: "tls" },
  smtp: { host: "smtp.example.com", port: 587, tls: "starttls" },
  sent_folder: "Sent",
  password_stored: true,
};

function filled(): import("./accountsForm").MailForm {
  return {
    ...form.EMPTY_MAIL_FORM,
    name: "work",
    email: "alice@example.com",
    imapHost: "imap.example.com",
    smtpHost: "smtp.example.com",
    password: "pw",
  };
}

describe("mail account form", () => {
  beforeEach(() => {
    invoke.mockReset();
  });

  it("starts with the usual secure defaults", () => {
    expect(form.EMPTY_MAIL_FORM.imapPort).toBe("993");
    expect(form.EMPTY_MAIL_FORM.imapSecurity).toBe("tls");
    expect(form.EMPTY_MAIL_FORM.smtpPort).toBe("465");
    expect(form.defaultPort("smtp", "starttls")).toBe(587);
    expect(form.defaultPort("imap", "starttls")).toBe(143);
    expect(form.defaultPort("smtp", "plain")).toBe(25);
  });

  it("moves a default port with the security choice but keeps a typed one", () => {
    expect(form.portAfterSecurityChange("smtp", "465", "tls", "starttls")).toBe("587");
    expect(form.portAfterSecurityChange("imap", "", "tls", "starttls")).toBe("143");
    expect(form.portAfterSecurityChange("smtp", "2525", "tls", "starttls")).toBe("2525");
  });

  it("suggests the servers from the address", () => {
    expect(form.suggestedHosts("Alice@Example.org")).toEqual({ imap: "imap.example.org", smtp: "smtp.example.org" });
    expect(form.suggestedHosts("alice")).toBeNull();
  });

  it("builds what the core takes", () => {
    const built = form.mailInput({ ...filled(), displayName: " Alice ", username: "" });
    expect(built).toEqual({
      input: {
        previous_name: null,
        name: "work",
        email: "alice@example.com",
        display_name: "Alice",
        username: "",
        imap: { host: "imap.example.com", port: 993, tls: "tls" },
        smtp: { host: "smtp.example.com", port: 465, tls: "tls" },
        sent_folder: "Sent",
        password: "pw",
      },
    });
  });

  it("says what is wrong in words", () => {
    const problem = (patch: Partial<import("./accountsForm").MailForm>) => {
      const built = form.mailInput({ ...filled(), ...patch });
      return "problem" in built ? built.problem : null;
    };
    expect(problem({ name: "my work" })).toMatch(/name/);
    expect(problem({ email: "alice" })).toMatch(/email address/);
    expect(problem({ imapHost: "" })).toMatch(/IMAP server/);
    expect(problem({ smtpHost: "smtp example" })).toMatch(/SMTP server/);
    expect(problem({ imapPort: "99999" })).toMatch(/IMAP port/);
    expect(problem({ smtpPort: "abc" })).toMatch(/SMTP port/);
    // A new account needs its password.
    expect(problem({ password: "" })).toMatch(/password/);
    expect(problem({})).toBeNull();
  });

  it("edits with a blank password, which keeps the stored one", () => {
    const editing = form.mailFormFrom(stored);
    expect(editing.password).toBe("");
    expect(editing.previousName).toBe("work");
    // An unset port shows the default for its security.
    expect(editing.imapPort).toBe("993");
    expect(editing.smtpPort).toBe("587");
    expect(editing.smtpSecurity).toBe("starttls");
    const built = form.mailInput(editing);
    expect("input" in built && built.input.password).toBeNull();
    expect("input" in built && built.input.previous_name).toBe("work");
  });

  it("sends the account and never asks for a password back", async () => {
    invoke.mockResolvedValue({ mail: [stored], dav: [] });
    const built = form.mailInput(filled());
    if (!("input" in built)) throw new Error(built.problem);
    const view = await ipc.saveMailAccount(built.input);
    expect(invoke).toHaveBeenCalledWith("save_mail_account", { account: built.input });
    expect(view.mail[0]).not.toHaveProperty("password");
    await ipc.removeMailAccount("work");
    await ipc.testMailAccount("work");
    expect(invoke.mock.calls.slice(1)).toEqual([
      ["remove_mail_account", { name: "work" }],
      ["test_mail_account", { name: "work" }],
    ]);
  });

  it("shows a refusal from the core as a UiError", async () => {
    invoke.mockRejectedValue({ code: "invalid_setting", message: "mail account \"work\": `email` is not an email address" });
    const built = form.mailInput(filled());
    if (!("input" in built)) throw new Error(built.problem);
    await expect(ipc.saveMailAccount(built.input)).rejects.toMatchObject({ code: "invalid_setting" });
  });
});

describe("calendar and contacts account form", () => {
  beforeEach(() => {
    invoke.mockReset();
  });

  const view: DavAccountView = {
    name: "home",
    kind: "caldav",
    url: "https://dav.example.com/",
    username: "me",
    password_stored: true,
  };

  it("checks the name, the address and the username", () => {
    const problem = (patch: Partial<import("./accountsForm").DavForm>) => {
      const built = form.davInput({ ...form.EMPTY_DAV_FORM, name: "home", url: "https://dav.example.com/", username: "me", ...patch });
      return "problem" in built ? built.problem : null;
    };
    expect(problem({})).toBeNull();
    expect(problem({ name: "my.home" })).toMatch(/name/);
    expect(problem({ url: "dav.example.com" })).toMatch(/address/);
    expect(problem({ url: "ftp://dav.example.com/" })).toMatch(/https/);
    expect(problem({ username: " " })).toMatch(/username/);
  });

  it("keeps the stored password when the field is left blank", () => {
    const editing = form.davFormFrom(view);
    expect(editing.kind).toBe("caldav");
    const built = form.davInput(editing);
    expect(built).toEqual({
      input: {
        previous_name: "home",
        name: "home",
        kind: "caldav",
        url: "https://dav.example.com/",
        username: "me",
        password: null,
      },
    });
    const typed = form.davInput({ ...editing, password: "new" });
    expect("input" in typed && typed.input.password).toBe("new");
  });

  it("calls the DAV commands", async () => {
    invoke.mockResolvedValue({ ok: true, code: null, message: "Signed in" });
    await ipc.testDavAccount("home");
    await ipc.removeDavAccount("home");
    await ipc.osAccounts();
    expect(invoke.mock.calls).toEqual([
      ["test_dav_account", { name: "home" }],
      ["remove_dav_account", { name: "home" }],
      ["os_accounts", undefined],
    ]);
  });

  it("labels a test's state", () => {
    expect(form.checkLabel(undefined)).toBe("Not checked");
    expect(form.checkLabel("checking")).toBe("Checking…");
    expect(form.checkLabel({ ok: true, code: null, message: "" })).toBe("Works");
    expect(form.checkLabel({ ok: false, code: "permission_denied", message: "" })).toBe("Does not work");
  });
});
