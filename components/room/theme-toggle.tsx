'use client';
// Switches between the light and dark themes (the OS preference applies until a choice is made).
import { setTheme, useTheme } from '@/lib/theme';
import { Button } from '../ui/button';

export function ThemeToggle() {
  const theme = useTheme();
  const next = theme === 'dark' ? 'light' : 'dark';
  return (
    <Button size="sm" variant="ghost" data-testid="theme-toggle" data-theme={theme} aria-label={`Switch to ${next} theme`} onClick={() => setTheme(next)}>
      <span aria-hidden>{theme === 'dark' ? '☀' : '☾'}</span>
    </Button>
  );
}
