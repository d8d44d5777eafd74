import { describe, expect, it } from "vitest";
import type { AppAccount } from "../../gen";
import { accountLabel, applyAccountEvent, byApp, connectQuestion, expiryText, signInHost } from "./accounts";

function account(appId: string, state: AppAccount["state"] = "not_connected"): AppAccount {
  return {
    app_id: appId,
    app_name: "Mail",
    provider: "github",
    scopes: ["repo", "read:user"],
    state,
    expires_at: null,
    refreshed_at: null,
    reason: null,
    authorize_url: "https://github.com/login/oauth/authorize",
  };
}

describe("the apps' accounts", () => {
  it("follows account events by app and ignores the rest", () => {
    const listed = byApp([account("mail"), account("notes")]);
    const dropped = {
      ...account("mail", "disconnected"),
      reason: "github refused refreshing the tokens (invalid_grant); connect the account again",
    };
    const next = applyAccountEvent(listed, { type: "app_account_changed", account: dropped });
    expect(next.mail.state).toBe("disconnected");
    expect(next.notes.state).toBe("not_connected");
    expect(accountLabel(next.mail)).toBe("github: Disconnected: connect again");
    expect(applyAccountEvent(next, { type: "chat_turn_started", session_id: "s" })).toBe(next);
  });

  it("tells the person who asks, where they sign in and for what before the browser opens", () => {
    const question = connectQuestion(account("mail"));
    expect(question).toContain("Mail wants to use your github account");
    expect(question).toContain("open github.com to sign in");
    expect(question).toContain("It asks for: repo, read:user.");
    expect(connectQuestion({ ...account("mail"), scopes: [] })).toContain("no particular scopes");
    expect(signInHost({ ...account("mail"), authorize_url: "http://127.0.0.1:8080/authorize" })).toBe(
      "127.0.0.1:8080",
    );
  });

  it("says when a connected account's token expires", () => {
    const connected = { ...account("mail", "connected"), expires_at: 10_000 };
    expect(expiryText(connected, 10_000 - 30)).toBe("token expires in 30 s");
    expect(expiryText(connected, 10_000 - 600)).toBe("token expires in 10 min");
    expect(expiryText(connected, 10_000 - 3 * 3600)).toBe("token expires in 3 h");
    expect(expiryText(connected, 10_001)).toContain("refreshes");
    expect(expiryText(account("mail"), 0)).toBeNull();
  });
});
