// Telegram Bot API updates as a webhook receives them, for tests of chat approvals: a private message, and a press on
// an inline keyboard button (callback_query), each with its own update id.
export function telegramUpdates(firstId = 7000) {
  let seq = firstId;
  return {
    /** A text message from `chatId` in its private chat with the bot. */
    message: (chatId: number, text: string) => JSON.stringify({ update_id: ++seq, message: { message_id: seq, from: { id: chatId, is_bot: false, first_name: 'M' }, chat: { id: chatId, type: 'private' }, text } }),
    /** `fromId` presses a button of message `messageId` in chat `chatId` (its own private chat unless given). */
    press: (fromId: number, messageId: number, data: string, chatId = fromId) =>
      JSON.stringify({ update_id: ++seq, callback_query: { id: `cbq${seq}`, from: { id: fromId, is_bot: false, first_name: 'P', username: `user${fromId}` }, message: { message_id: messageId, date: 0, chat: { id: chatId, type: 'private' }, text: 'Approval needed' }, chat_instance: '-1', data } }),
  };
}
